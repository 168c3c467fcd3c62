package deadlock

import (
	"cmp"
	"slices"
	"time"

	"github.com/txnlock/txnlock"
)

// graph is the waits-for graph: waiting transactions, the resources they
// wait for, and who blocks each resource. It is a plain data structure: no
// lock, no clock, no goroutine. The live graph is guarded by
// Detector.mu; a snapshot belongs to the background pass that took it.
type graph struct {
	txns map[txnlock.TxnID]*txnNode
	res  map[txnlock.ResourceID]*resource
	// nWaits counts the waits. A wait is found through its transaction
	// (find), which seldom has more than one, so no map is keyed by
	// waiter.
	nWaits int
	// seq numbers the waits reported without a stamp (WaitEdge.Stamp; a
	// Detector stamps every wait), in the order they were reported. A
	// wait's seq is its stamp: the newest wait of a cycle is the one that
	// closed it.
	seq uint64
	// epoch stamps the nodes one search has visited, so that a search
	// needs no visited set of its own and no clearing.
	epoch uint64
	// freeEdges and freeTxns recycle nodes, so that a wait costs no
	// allocation in the steady state.
	freeEdges []*edge
	freeTxns  []*txnNode
	// last is the resource looked up last: a hot lock's waits and
	// blocker changes come in runs.
	last *resource
	// dorm holds the waits no search can reach (dormant.go); nil in a
	// snapshot. The live graph keeps its blocker counts.
	dorm *dormant
	// sorted and added are setBlockers' buffers.
	sorted, added []txnlock.TxnID
}

// maxFree bounds each free list.
const maxFree = 1024

// edge is one wait: txn waits for res.
type edge struct {
	waiter    txnlock.Waiter
	txn       txnlock.TxnID
	node      *txnNode // txn's node
	res       *resource
	lock      txnlock.LockRef
	locksHeld int
	since     time.Time
	seq       uint64
}

// active reports whether the wait may still be real: its waiter has not
// been granted or failed (txnlock.Waiter.Active). A manager grants a
// waiter, which wakes it; the waiter's goroutine Unblocks it a moment
// later; in between the graph still shows the wait. The search ignores
// such waits, so that a transaction already running again is never part
// of a reported cycle, and Block does not record a wait that ended before
// it came.
func (e *edge) active() bool { return e.waiter.Active() }

// txnNode is a transaction with at least one wait.
type txnNode struct {
	id    txnlock.TxnID
	waits []*edge // usually one; a transaction may wait in several places
	// Search state: mark == graph.epoch when visited by the current
	// search, onStack while it is on the search path.
	mark    uint64
	onStack bool
}

// resource is a lock with waiters, and the transactions that block it.
type resource struct {
	id txnlock.ResourceID
	// blockers is sorted, without duplicates.
	blockers []txnlock.TxnID
	waits    int  // edges pointing here
	dropped  bool // DropResource came while waits > 0: forget it at zero
	// Search state of the resource's shared view (reached from a waiter
	// that is not among the blockers), as in txnNode.
	mark    uint64
	onStack bool
	// snapOff is where flatten copied blockers in its arena.
	snapOff int
}

// blocks reports whether txn is among r's blockers (an upgrading holder
// waiting for its own lock).
func (r *resource) blocks(txn txnlock.TxnID) bool {
	_, ok := slices.BinarySearch(r.blockers, txn)
	return ok
}

// newGraph returns an empty live graph, with its dormant table.
func newGraph() graph {
	return graph{
		txns: make(map[txnlock.TxnID]*txnNode),
		res:  make(map[txnlock.ResourceID]*resource),
		dorm: new(dormant),
	}
}

// waiting reports whether txn has a wait that is still active.
func (g *graph) waiting(txn txnlock.TxnID) bool {
	if n := g.txns[txn]; n != nil {
		for _, e := range n.waits {
			if e.active() {
				return true
			}
		}
	}
	return false
}

// find returns w's wait, or nil. w must be a live waiter (its wait not
// over and unblocked): see findWait.
func (g *graph) find(w txnlock.Waiter) *edge { return g.findWait(w.Txn(), w) }

// findWait returns the wait of waiter w of txn, or nil. It compares w and
// calls none of its methods, so w may be a waiter a snapshot still names
// after its wait ended and its owner recycled it.
func (g *graph) findWait(txn txnlock.TxnID, w txnlock.Waiter) *edge {
	if n := g.txns[txn]; n != nil {
		for _, e := range n.waits {
			if e.waiter == w {
				return e
			}
		}
	}
	return nil
}

// resource returns id's node, made if new (or revived if dropped).
func (g *graph) resource(id txnlock.ResourceID) *resource {
	r := g.last
	if r == nil || r.id != id {
		r = g.res[id]
		if r == nil {
			r = &resource{id: id}
			g.res[id] = r
		}
		g.last = r
	}
	r.dropped = false
	return r
}

func (g *graph) deleteResource(r *resource) {
	delete(g.res, r.id)
	if g.last == r {
		g.last = nil
	}
	if g.dorm != nil {
		for _, b := range r.blockers {
			g.dorm.removeBlockerLocked(b)
		}
	}
	r.blockers = nil
}

// block records e and returns its edge; nil for a nil waiter, or one
// that says its wait has already ended (granted or failed before its
// goroutine came to Block: its Unblock will find nothing). A second Block
// of the same waiter replaces its wait.
func (g *graph) block(e txnlock.WaitEdge) *edge {
	if e.Waiter == nil {
		return nil
	}
	if !e.Waiter.Active() {
		return nil
	}
	txn := e.Waiter.Txn()
	n := g.txns[txn]
	if n != nil {
		for _, old := range n.waits {
			if old.waiter == e.Waiter {
				g.removeEdge(old)
				n = g.txns[txn]
				break
			}
		}
	}
	seq := e.Stamp
	if seq == 0 {
		g.seq++
		seq = g.seq
	}
	ed := g.newEdge()
	*ed = edge{
		waiter:    e.Waiter,
		txn:       txn,
		node:      n,
		res:       g.resource(e.Resource),
		lock:      e.Lock,
		locksHeld: e.LocksHeld,
		since:     e.Since,
		seq:       seq,
	}
	g.nWaits++
	ed.res.waits++
	if n == nil {
		n = g.newTxn(ed.txn)
		g.txns[ed.txn] = n
		ed.node = n
	}
	n.waits = append(n.waits, ed)
	return ed
}

func (g *graph) newEdge() *edge {
	if n := len(g.freeEdges); n > 0 {
		e := g.freeEdges[n-1]
		g.freeEdges = g.freeEdges[:n-1]
		return e
	}
	return &edge{}
}

func (g *graph) newTxn(id txnlock.TxnID) *txnNode {
	if n := len(g.freeTxns); n > 0 {
		t := g.freeTxns[n-1]
		g.freeTxns = g.freeTxns[:n-1]
		t.id = id
		return t
	}
	return &txnNode{id: id}
}

// unblock removes w's wait; a no-op for an unknown waiter.
func (g *graph) unblock(w txnlock.Waiter) *edge {
	e := g.find(w)
	if e != nil {
		g.removeEdge(e)
	}
	return e
}

func (g *graph) removeEdge(e *edge) {
	g.nWaits--
	r := e.res
	r.waits--
	if r.waits == 0 && r.dropped && g.res[r.id] == r {
		g.deleteResource(r)
	}
	n := e.node
	if i := slices.Index(n.waits, e); i >= 0 {
		n.waits = slices.Delete(n.waits, i, i+1)
	}
	if len(n.waits) == 0 {
		delete(g.txns, e.txn)
		if len(g.freeTxns) < maxFree {
			*n = txnNode{waits: n.waits[:0]}
			g.freeTxns = append(g.freeTxns, n)
		}
	}
	if len(g.freeEdges) < maxFree {
		*e = edge{}
		g.freeEdges = append(g.freeEdges, e)
	}
}

// setBlockers installs a sorted copy of blockers, without duplicates, and
// returns the transactions that were not blockers of r before (valid until
// the next call). In the live graph the dormant table counts the change,
// and the parked waits of each new blocker move into the graph.
func (g *graph) setBlockers(r *resource, blockers []txnlock.TxnID) (added []txnlock.TxnID) {
	if slices.Equal(r.blockers, blockers) {
		return nil // unchanged (and so already sorted)
	}
	nb := append(g.sorted[:0], blockers...)
	if len(nb) > 1 {
		slices.Sort(nb)
		nb = slices.Compact(nb)
	}
	old := r.blockers
	added = g.added[:0]
	for i, j := 0, 0; i < len(old) || j < len(nb); {
		switch {
		case j == len(nb) || (i < len(old) && old[i] < nb[j]):
			if g.dorm != nil {
				g.dorm.removeBlockerLocked(old[i])
			}
			i++
		case i == len(old) || nb[j] < old[i]:
			added = append(added, nb[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	r.blockers = append(old[:0], nb...)
	g.sorted, g.added = nb, added
	if g.dorm != nil {
		for _, b := range added {
			g.dorm.addBlockerLocked(b, g)
		}
	}
	return added
}

// dropResource forgets id, at once if no wait points at it, else when the
// last one goes: a manager drops a resource after its last waiter left its
// queue, so a wait still recorded is one whose goroutine has yet to
// Unblock it.
func (g *graph) dropResource(id txnlock.ResourceID) {
	r := g.res[id]
	switch {
	case r == nil:
	case r.waits == 0:
		g.deleteResource(r)
	default:
		r.dropped = true
	}
}

// flatWait is one wait as copied under the mutex for a snapshot.
type flatWait struct {
	e      edge // res and node are nil
	res    txnlock.ResourceID
	b0, b1 int // the resource's blockers: arena[b0:b1]
}

// flatten appends every wait to dst, and each resource's blockers once to
// arena: the only part of a snapshot done under the mutex, one copy per
// wait and no allocation once the buffers are large enough.
func (g *graph) flatten(dst []flatWait, arena []txnlock.TxnID) ([]flatWait, []txnlock.TxnID) {
	g.epoch++
	for _, n := range g.txns {
		for _, e := range n.waits {
			r := e.res
			if r.mark != g.epoch {
				r.mark = g.epoch
				r.snapOff = len(arena)
				arena = append(arena, r.blockers...)
			}
			f := flatWait{e: *e, res: r.id, b0: r.snapOff, b1: r.snapOff + len(r.blockers)}
			f.e.res, f.e.node = nil, nil
			dst = append(dst, f)
		}
	}
	return dst, arena
}

// snapshotOf builds a graph from flattened waits, outside the mutex. The
// snapshot's resources share arena.
func snapshotOf(flat []flatWait, arena []txnlock.TxnID) *graph {
	s := &graph{
		txns:   make(map[txnlock.TxnID]*txnNode, len(flat)),
		res:    make(map[txnlock.ResourceID]*resource),
		nWaits: len(flat),
	}
	edges := make([]edge, len(flat))
	for i := range flat {
		f := &flat[i]
		r := s.res[f.res]
		if r == nil {
			r = &resource{id: f.res, blockers: arena[f.b0:f.b1:f.b1]}
			s.res[r.id] = r
		}
		r.waits++
		e := &edges[i]
		*e = f.e
		e.res = r
		n := s.txns[e.txn]
		if n == nil {
			n = &txnNode{id: e.txn}
			s.txns[e.txn] = n
		}
		e.node = n
		n.waits = append(n.waits, e)
	}
	// Waits in the order they began, as in the live graph.
	for _, n := range s.txns {
		slices.SortFunc(n.waits, func(a, b *edge) int { return cmp.Compare(a.seq, b.seq) })
	}
	return s
}

// roots returns the waiting transactions in id order, so that a full
// search is deterministic.
func (g *graph) roots() []*txnNode {
	out := make([]*txnNode, 0, len(g.txns))
	for _, n := range g.txns {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *txnNode) int { return cmp.Compare(a.id, b.id) })
	return out
}
