package deadlock

import (
	"cmp"
	"slices"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// wait is one reported wait, as the registry keeps it: no more than a
// search needs, so that a report writes 32 bytes. What it requests, since
// when, and the locks its transaction holds are asked of the waiter when
// it is in a cycle (source.describe).
type wait struct {
	waiter detect.Waiter
	txn    txnlock.TxnID
	// seq is the wait's stamp (detect.Edge.Stamp, or one the detector took):
	// the newest wait of a cycle is the one that closed it.
	seq uint64
	// lone: the wait's Block left it unsearched, as nobody could wait for
	// its transaction (Detector.block); a later wait of the same
	// transaction then searches from every wait of it.
	lone bool
}

// active reports whether the wait may still be real (detect.Waiter.Active):
// a granted waiter's goroutine Unblocks it a moment after the grant, and
// no search follows it meanwhile.
func (w *wait) active() bool { return w.waiter.Active() }

// edge is a wait in a view of the graph, with whom its lock was blocked by
// when the view read it.
type edge struct {
	wait
	node     *txnNode
	blockers []txnlock.TxnID
	// lock, since and locksHeld are asked of the waiter (source.describe)
	// once the edge is in a cycle, for the victim policy and the report.
	lock      txnlock.LockRef
	since     time.Time
	locksHeld int
	// member: in a confirmed cycle, a wait the search found, not a
	// request in between that confirmation added (core.chooseVictim).
	member bool
}

// txnNode is a transaction in a view: its waits (none if it does not
// wait) and the search's marks.
type txnNode struct {
	id    txnlock.TxnID
	waits []*edge
	// Search state: mark == graph.epoch when visited by the current
	// search, onStack while it is on the search path.
	mark    uint64
	onStack bool
}

// source is where the core reads waits: the registry, which asks each
// waiter's manager (registry.go); traces give a plain map. It only
// answers: the core changes nothing through it.
type source interface {
	// waits calls fn with each active wait of txn and whom it waits for
	// now: its lock's blockers (Waiter.Blockers) or, if exact, its direct
	// waits-for list (Waiter.WaitsFor). fn must not call the source.
	waits(txn txnlock.TxnID, exact bool, fn func(w *wait, who []txnlock.TxnID))
	// describe asks e's wait, if it is still reported, what it requests
	// and since when (Waiter.Requested), and the managers attached how
	// many locks its transaction holds (detect.LockCounter), into e.
	describe(e *edge)
}

// graph is a view of the waits-for graph: transactions, their waits, and
// each wait's blockers. A live view (src set) reads a transaction's waits
// from the source the first time a search reaches it, so a search asks
// the managers about what it visits and nothing else; a snapshot (src
// nil) is complete when built, and a transaction it lacks does not wait.
// It is a plain data structure: no lock, no clock, no goroutine.
type graph struct {
	src   source
	txns  map[txnlock.TxnID]*txnNode
	arena []txnlock.TxnID // the edges' blockers
	// epoch stamps the nodes one search has visited, so that a search
	// needs no visited set of its own and no clearing.
	epoch uint64
	// freeNodes and freeEdges recycle a live view's nodes from one search
	// to the next.
	freeNodes []*txnNode
	freeEdges []*edge
	// cuts are edges that confirmation found not to hold: a live view
	// leaves them out of the waits it reads, across reset, until the
	// caller clears cuts (core.check, once per check).
	cuts []cutEdge
}

// cutEdge is the edge from the wait of waiter with stamp seq to to.
type cutEdge struct {
	waiter detect.Waiter
	seq    uint64
	to     txnlock.TxnID
}

// cut drops to from e's blockers, in this view and in the views read
// after it (cuts).
func (g *graph) cut(e *edge, to txnlock.TxnID) {
	g.cuts = append(g.cuts, cutEdge{e.waiter, e.seq, to})
	e.blockers = slices.DeleteFunc(slices.Clone(e.blockers), func(t txnlock.TxnID) bool { return t == to })
}

// maxFree bounds each free list.
const maxFree = 1024

func newGraph(src source) graph {
	return graph{src: src, txns: make(map[txnlock.TxnID]*txnNode)}
}

// reset forgets what a live view read, before a new search.
func (g *graph) reset() {
	for _, n := range g.txns {
		for _, e := range n.waits {
			if len(g.freeEdges) < maxFree {
				*e = edge{}
				g.freeEdges = append(g.freeEdges, e)
			}
		}
		if len(g.freeNodes) < maxFree {
			*n = txnNode{waits: n.waits[:0]}
			g.freeNodes = append(g.freeNodes, n)
		}
	}
	clear(g.txns)
	clear(g.arena)
	g.arena = g.arena[:0]
}

// node returns txn's node, read from the source if a live view has not
// read it yet; nil in a snapshot that lacks it. A node without waits is a
// transaction that does not wait: a dead end.
func (g *graph) node(txn txnlock.TxnID) *txnNode {
	if n := g.txns[txn]; n != nil || g.src == nil {
		return n
	}
	n := g.newNode(txn)
	g.src.waits(txn, false, func(w *wait, blockers []txnlock.TxnID) {
		g.addEdge(n, w, blockers)
	})
	return n
}

func (g *graph) newNode(txn txnlock.TxnID) *txnNode {
	var n *txnNode
	if k := len(g.freeNodes); k > 0 {
		n = g.freeNodes[k-1]
		g.freeNodes = g.freeNodes[:k-1]
		n.id = txn
	} else {
		n = &txnNode{id: txn}
	}
	g.txns[txn] = n
	return n
}

// addEdge adds wait w of n, blocked by blockers (copied).
func (g *graph) addEdge(n *txnNode, w *wait, blockers []txnlock.TxnID) *edge {
	var e *edge
	if k := len(g.freeEdges); k > 0 {
		e = g.freeEdges[k-1]
		g.freeEdges = g.freeEdges[:k-1]
	} else {
		e = &edge{}
	}
	b0 := len(g.arena)
	g.arena = append(g.arena, blockers...)
	for _, c := range g.cuts {
		if c.waiter == w.waiter && c.seq == w.seq {
			kept := slices.DeleteFunc(g.arena[b0:], func(t txnlock.TxnID) bool { return t == c.to })
			g.arena = g.arena[:b0+len(kept)]
		}
	}
	*e = edge{wait: *w, node: n, blockers: g.arena[b0:len(g.arena):len(g.arena)]}
	n.waits = append(n.waits, e)
	return e
}

// flatWait is one wait as a background pass copies it from the registry.
type flatWait struct {
	w      wait
	b0, b1 int // its blockers: arena[b0:b1]
}

// snapshotOf builds a snapshot from flattened waits. Each transaction's
// waits are in the order they began, as in the registry.
func snapshotOf(flat []flatWait, arena []txnlock.TxnID) *graph {
	s := &graph{txns: make(map[txnlock.TxnID]*txnNode, len(flat))}
	edges := make([]edge, len(flat))
	for i := range flat {
		f := &flat[i]
		n := s.txns[f.w.txn]
		if n == nil {
			n = &txnNode{id: f.w.txn}
			s.txns[n.id] = n
		}
		e := &edges[i]
		*e = edge{wait: f.w, node: n, blockers: arena[f.b0:f.b1:f.b1]}
		n.waits = append(n.waits, e)
	}
	for _, n := range s.txns {
		slices.SortFunc(n.waits, func(a, b *edge) int { return cmp.Compare(a.seq, b.seq) })
	}
	return s
}

// removeEdge drops e from a snapshot, so that a pass does not find the
// same cycle again.
func (g *graph) removeEdge(e *edge) {
	n := e.node
	if i := slices.Index(n.waits, e); i >= 0 {
		n.waits = slices.Delete(n.waits, i, i+1)
	}
}

// roots returns the waiting transactions in id order, so that a full
// search is deterministic.
func (g *graph) roots() []*txnNode {
	out := make([]*txnNode, 0, len(g.txns))
	for _, n := range g.txns {
		if len(n.waits) > 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *txnNode) int { return cmp.Compare(a.id, b.id) })
	return out
}
