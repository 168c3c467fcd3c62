package cluster

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/txnlock/txnlock"
)

// maxCyclesPerPass bounds the candidate cycles one pass confirms before
// the union graph is read again.
const maxCyclesPerPass = 64

// owned is an exported wait and the node it waits on.
type owned struct {
	node string
	w    wait
}

// step is one edge of a cycle: wait o waits for transaction to.
type step struct {
	o  *owned
	to txnlock.TxnID
}

type edgeKey struct {
	node string
	seq  uint64
	to   txnlock.TxnID
}

func (s step) key() edgeKey { return edgeKey{s.o.node, s.o.w.Seq, s.to} }

// union is a copy of the nodes' exported waits, searched without the
// detector's lock: each transaction's waits, on any node, and the edges a
// pass has cut (single-node cycles, which the node's own detector breaks,
// and edges that did not confirm).
type union struct {
	adj map[txnlock.TxnID][]*owned
	cut map[edgeKey]bool
}

func (d *detector) snapshot() *union {
	g := &union{adj: map[txnlock.TxnID][]*owned{}, cut: map[edgeKey]bool{}}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.peers {
		for _, w := range p.waits {
			g.adj[w.Txn] = append(g.adj[w.Txn], &owned{node: p.id, w: w})
		}
	}
	return g
}

// findCycle returns a cycle of the graph, by a depth-first search from
// each transaction in id order, or nil.
func (g *union) findCycle() []step {
	const (
		white = iota
		gray
		black
	)
	color := map[txnlock.TxnID]uint8{}
	var stack, found []step
	var visit func(t txnlock.TxnID) bool
	visit = func(t txnlock.TxnID) bool {
		color[t] = gray
		for _, o := range g.adj[t] {
			for _, to := range o.w.To {
				s := step{o, to}
				if to == t || g.cut[s.key()] {
					continue
				}
				stack = append(stack, s)
				switch color[to] {
				case gray:
					i := slices.IndexFunc(stack, func(s step) bool { return s.o.w.Txn == to })
					found = slices.Clone(stack[i:])
					return true
				case white:
					if visit(to) {
						return true
					}
				}
				stack = stack[:len(stack)-1]
			}
		}
		color[t] = black
		return false
	}
	for _, t := range slices.Sorted(maps.Keys(g.adj)) {
		if color[t] == white && visit(t) {
			return found
		}
	}
	return nil
}

// remove takes txn's waits out of the graph.
func (g *union) remove(txn txnlock.TxnID) { delete(g.adj, txn) }

// pass searches the union graph for cycles across nodes and breaks each
// one that the nodes confirm.
func (d *detector) pass(ctx context.Context) {
	g := d.snapshot()
	for range maxCyclesPerPass {
		cyc := g.findCycle()
		if cyc == nil || ctx.Err() != nil {
			return
		}
		if singleNode(cyc) {
			g.cut[cyc[0].key()] = true
			continue
		}
		d.n.c.cycles.Add(1)
		dl, bad := d.confirm(ctx, cyc)
		if dl == nil {
			d.n.c.falseCandidates.Add(1)
			g.cut[cyc[bad].key()] = true
			continue
		}
		if h := d.n.opts.OnCycle; h != nil && !h(dl.toError()) {
			g.cut[cyc[0].key()] = true
			continue
		}
		victim := slices.IndexFunc(cyc, func(s step) bool { return s.o.w.Txn == dl.Victim })
		if a := d.ask(ctx, cyc[victim].o.node, &message{Kind: kindFail, Deadlock: dl}); a != nil && a.OK {
			d.n.c.confirmed.Add(1)
		}
		g.remove(dl.Victim)
	}
}

func singleNode(cyc []step) bool {
	return !slices.ContainsFunc(cyc, func(s step) bool { return s.o.node != cyc[0].o.node })
}

// confirm asks the nodes that own the cycle's edges to read each again
// against their live lock tables, twice, the second round after every
// node answered the first: a wait that ended, or an edge that is gone, in
// either round fails the cycle. It returns the deadlock to break, with
// its victim chosen, or nil and the index of an edge that failed.
func (d *detector) confirm(ctx context.Context, cyc []step) (*wireDeadlock, int) {
	byNode := map[string][]int{} // the cycle's steps on each node
	for i, s := range cyc {
		byNode[s.o.node] = append(byNode[s.o.node], i)
	}
	entries := make([]entry, len(cyc))
	for round := range 2 {
		if f := d.n.testingBetweenReads.Load(); round == 1 && f != nil {
			(*f)()
		}
		var mu sync.Mutex
		bad := -1
		var wg sync.WaitGroup
		for node, idx := range byNode {
			m := &message{Kind: kindConfirm}
			for _, i := range idx {
				m.Check = append(m.Check, wait{Seq: cyc[i].o.w.Seq, Txn: cyc[i].o.w.Txn, To: []txnlock.TxnID{cyc[i].to}})
			}
			wg.Go(func() {
				a := d.ask(ctx, node, m)
				mu.Lock()
				defer mu.Unlock()
				if a == nil || !a.OK || len(a.Entries) != len(idx) {
					bad = idx[0]
					return
				}
				for j, i := range idx {
					entries[i] = a.Entries[j]
				}
			})
		}
		wg.Wait()
		if bad >= 0 {
			return nil, bad
		}
	}
	dl := &wireDeadlock{Epoch: d.epoch, Time: d.n.opts.Local.Clock.Now(), Cycle: entries}
	v := 0
	for i, s := range cyc {
		dl.Nodes = append(dl.Nodes, s.o.node)
		vs := cyc[v].o.w
		if c := cmp.Compare(s.o.w.Priority, vs.Priority); c < 0 || c == 0 && s.o.w.Txn > vs.Txn {
			v = i
		}
	}
	dl.Victim, dl.Wait = cyc[v].o.w.Txn, cyc[v].o.w.Seq
	return dl, 0
}
