package deadlock

import (
	"math"
	"time"

	"github.com/txnlock/txnlock"
)

// frame is one transaction on the search path and where the search is in
// its waits and in the blockers of the wait it is following.
type frame struct {
	txn   *txnNode
	waits []*edge // waits still to follow
	e     *edge   // the wait being followed; nil between waits
	bi    int     // next blocker of e to look at
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
	// for a lock that cycle[i+1].txn blocks (the last wraps).
	cycle []*edge
	// met is the first cycle an on-block search met that does not pass
	// through its target, in the same order, if it found no cycle that
	// does. The exact cycle may still pass through the target: a request
	// queued ahead of a member on the member's lock, which the view
	// contracts (the member's wait leads to the lock's blockers, not to
	// it), so its own search meets the cycle and never reaches itself.
	met []*edge
	// trip names the limit hit ("depth": a path was cut there and no
	// cycle found; "steps"; "time"); path is the search path at that
	// moment (the first cut, for "depth").
	trip  string
	path  []*edge
	steps int
}

// walk is the one depth-first search of a view, iterative so that its
// depth costs no goroutine stack. It starts at root, following only
// rootWaits.
//
// With target set (an on-block search, target = root) it looks for a path
// back to target, and keeps the first other cycle it meets (result.met)
// in case it finds none. With target zero (a full search) it stops at the
// first cycle of any kind: an edge back to a transaction on the path.
//
// Following a wait of T means visiting the blockers of its lock but T.
// Every transaction is expanded at most once per search: a search is
// linear in the part of the graph it reaches, and a queue of N waiters
// costs nothing, because no blocker list names a queued waiter unless it
// also blocks something. A wait whose waiter says it no longer waits is
// not followed.
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
		if f.e == nil || f.bi >= len(f.e.blockers) {
			// Done with this wait: take the next, or pop.
			f.e, f.bi = nil, 0
			if len(f.waits) == 0 {
				f.txn.onStack = false
				st = st[:len(st)-1]
				continue
			}
			e := f.waits[0]
			f.waits = f.waits[1:]
			if e.active() {
				f.e = e
			} // else granted or failed, not yet Unblocked
			continue
		}
		b := f.e.blockers[f.bi]
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
			continue // an upgrade: a transaction never blocks itself
		}
		n := g.node(b)
		if n == nil || len(n.waits) == 0 {
			continue // b is not waiting: a dead end
		}
		if n.mark == ep {
			if n.onStack && (target == 0 || b == target || res.met == nil) {
				var c []*edge
				for i := range st {
					if st[i].txn == n {
						c = cycleOf(st[i:])
						break
					}
				}
				if target == 0 || b == target {
					res.cycle, res.met, res.trip, res.path = c, nil, "", nil
					return res
				}
				res.met = c
			}
			continue
		}
		if len(st) >= lim.depth {
			// Too deep: b is not followed here (nor marked, so that a
			// shorter path may still follow it), and the search goes on
			// for a cycle within the depth. If it finds none, it trips.
			if res.trip == "" {
				res.trip, res.path = "depth", cycleOf(st)
			}
			continue
		}
		n.mark, n.onStack = ep, true
		st = append(st, frame{txn: n, waits: n.waits})
	}
	return res
}

// cycleOf returns the waits the frames follow.
func cycleOf(frames []frame) []*edge {
	out := make([]*edge, 0, len(frames))
	for _, f := range frames {
		if f.e != nil {
			out = append(out, f.e)
		}
	}
	return out
}

func tripped(res result, limit string, st []frame) result {
	res.trip = limit
	res.path = cycleOf(st)
	return res
}

// findCycle runs full searches of a snapshot from every waiting
// transaction, in id order, and returns the first cycle, or nil, and the
// steps taken. Nodes keep their marks from one root to the next (a
// depth-first forest), so a pass that finds nothing is linear in the
// graph.
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
