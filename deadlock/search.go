package deadlock

import (
	"math"
	"time"

	"github.com/txnlock/txnlock"
)

// frame is one transaction on the search path and where the search is in
// its waits and in the blockers of the resource it is following.
type frame struct {
	txn   *txnNode
	waits []*edge // waits still to follow
	e     *edge   // the wait being followed; nil between waits
	bi    int     // next blocker of e.res to look at
	view  bool    // e.res's shared view is on the path (see walk)
}

// limits bound a search. A full (background) search has none.
type limits struct {
	depth, steps int
	time         time.Duration
	clock        txnlock.Clock
}

var noLimits = limits{depth: math.MaxInt, steps: math.MaxInt}

// result is what a search found: a cycle, a trip, or neither.
type result struct {
	// cycle lists the waits of the cycle in wait order: cycle[i].txn waits
	// for cycle[i].res, which cycle[i+1].txn blocks (the last wraps).
	cycle []*edge
	// trip names the limit hit ("depth", "steps", "time"); path is the
	// search path at that moment.
	trip  string
	path  []*edge
	steps int
}

// walk is the one depth-first search of the graph, iterative so that its
// depth costs no goroutine stack. It starts at root, following only
// rootWaits.
//
// With target set (an on-block search, target = root) it looks for a path
// back to target and ignores every other cycle. With target zero (a full
// search) it stops at the first cycle of any kind: an edge back to a node
// on the path.
//
// The nodes are transactions and resource views. Following a wait of T to
// resource r means visiting r's blockers except T. When T is not among
// them the view "all blockers of r" is the same whoever arrives, so it is
// marked and expanded once per search: a queue of N waiters on r costs one
// expansion of r, not N. When T is among them (an upgrade) the view "r
// without T" is private to T, which the search visits once, so it needs no
// mark. Every node is expanded at most once: a search is linear in the
// part of the graph it reaches. A wait whose waiter says it no longer
// waits (edge.active) is not followed.
//
// fresh starts a new epoch; a full search keeps the epoch across its roots.
func (g *graph) walk(stack *[]frame, root *txnNode, rootWaits []*edge, target txnlock.TxnID, lim limits, fresh bool) (res result) {
	if fresh {
		g.epoch++
	}
	ep := g.epoch
	st := (*stack)[:0]
	defer func() {
		for i := range st {
			st[i].txn.onStack = false
			if st[i].view {
				st[i].e.res.onStack = false
			}
		}
		clear(st)
		*stack = st[:0]
	}()
	// The clock is first read at step timeCheckEvery, so that the many
	// short searches never read it; the budget counts from there.
	var start time.Time
	root.mark, root.onStack = ep, true
	st = append(st, frame{txn: root, waits: rootWaits})
	for len(st) > 0 {
		f := &st[len(st)-1]
		if f.e == nil || f.bi >= len(f.e.res.blockers) {
			// Done with this wait: take the next, or pop.
			if f.view {
				f.e.res.onStack = false
			}
			f.e, f.bi, f.view = nil, 0, false
			if len(f.waits) == 0 {
				f.txn.onStack = false
				st = st[:len(st)-1]
				continue
			}
			e := f.waits[0]
			f.waits = f.waits[1:]
			if !e.active() {
				continue // granted or failed, not yet Unblocked
			}
			if r := e.res; !r.blocks(e.txn) {
				if r.mark == ep {
					if target == 0 && r.onStack {
						// Back to a resource on the path: the cycle runs
						// from the frame after the one following r.
						for i := len(st) - 2; i >= 0; i-- {
							if st[i].view && st[i].e.res == r {
								res.cycle = cycleOf(st[i+1:], e)
								break
							}
						}
						return res
					}
					continue
				}
				r.mark, r.onStack = ep, true
				f.view = true
			}
			f.e = e
			continue
		}
		b := f.e.res.blockers[f.bi]
		f.bi++
		res.steps++
		if res.steps > lim.steps {
			return tripped(res, "steps", st)
		}
		if res.steps%timeCheckEvery == 0 && lim.clock != nil {
			if now := lim.clock.Now(); start.IsZero() {
				start = now
			} else if now.Sub(start) > lim.time {
				return tripped(res, "time", st)
			}
		}
		if b == f.e.txn {
			continue
		}
		n := g.txns[b]
		if n == nil {
			continue // b is not waiting: a dead end
		}
		if n.mark == ep {
			if n.onStack && (target == 0 || b == target) {
				for i := range st {
					if st[i].txn == n {
						res.cycle = cycleOf(st[i:], nil)
						break
					}
				}
				return res
			}
			continue
		}
		if len(st) >= lim.depth {
			return tripped(res, "depth", st)
		}
		n.mark, n.onStack = ep, true
		st = append(st, frame{txn: n, waits: n.waits})
	}
	return res
}

// cycleOf returns the waits of the frames, and last if set.
func cycleOf(frames []frame, last *edge) []*edge {
	out := make([]*edge, 0, len(frames)+1)
	for _, f := range frames {
		if f.e != nil {
			out = append(out, f.e)
		}
	}
	if last != nil {
		out = append(out, last)
	}
	return out
}

func tripped(res result, limit string, st []frame) result {
	res.trip = limit
	res.path = cycleOf(st, nil)
	return res
}

// findCycle runs full searches from every waiting transaction, in id
// order, and returns the first cycle, or nil, and the steps taken. Nodes
// keep their marks from one root to the next (a depth-first forest), so a
// pass that finds nothing is linear in the graph.
func (g *graph) findCycle(stack *[]frame) ([]*edge, int) {
	steps := 0
	g.epoch++
	for _, n := range g.roots() {
		if n.mark == g.epoch {
			continue
		}
		res := g.walk(stack, n, n.waits, 0, noLimits, false)
		steps += res.steps
		if res.cycle != nil {
			return res.cycle, steps
		}
	}
	return nil, steps
}
