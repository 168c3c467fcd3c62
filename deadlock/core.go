package deadlock

import (
	"fmt"
	"slices"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// Stats are the detector's counters since it was created.
type Stats struct {
	Searches         uint64 // on-block searches run
	Steps            uint64 // edges followed by on-block searches and background passes
	Trips            uint64 // on-block searches cut short by a limit
	Deadlocks        uint64 // cycles broken (a victim chosen)
	Assumed          uint64 // trips reported as deadlocks (Breaker AssumeDeadlock)
	Deferred         uint64 // trips handed to the background pass (Breaker Defer)
	BackgroundPasses uint64 // background passes run
	// FalsePositivesAvoided counts cycles a search found that live state
	// did not confirm (an edge gone, or a member no longer waiting).
	FalsePositivesAvoided uint64
	// Waits is the waits reported and not yet forgotten: every active
	// one, and those that ended but were not yet taken back.
	Waits int
}

// String renders the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("searches=%d steps=%d trips=%d deadlocks=%d assumed=%d deferred=%d background_passes=%d false_positives_avoided=%d waits=%d",
		s.Searches, s.Steps, s.Trips, s.Deadlocks, s.Assumed, s.Deferred, s.BackgroundPasses, s.FalsePositivesAvoided, s.Waits)
}

// core is the deterministic heart of the detector: its searches, the
// counters and the history. It has no lock, starts no goroutine and reads
// time only from opts.Clock. It reads the graph through its source (the
// registry, which asks the managers; a plain map in traces) and changes
// nothing outside itself: what a search decides comes back as values, a
// victim to fail (verdict) or a pass wanted (search.deferred), and
// Detector carries them out under its mutex and tells the core what became
// of each victim (settle), as raft's Ready and Advance.
type core struct {
	opts    Options
	src     source
	g       graph // the live view, read afresh by every search
	hist    history
	stats   Stats
	stack   []frame // reused by every search
	rootBuf [1]*edge
	roots   []detect.Waiter // reused by every search's roots
}

// search is the on-block searches one event asks for, in progress: from
// each of roots in turn, waits of txn, and from the same wait again after
// each victim that is not its own. It names the waits by waiter and
// transaction, and calls none of a waiter's methods unless its wait is
// still reported: the waits may end, and be recycled, meanwhile.
type search struct {
	txn   txnlock.TxnID
	roots []detect.Waiter // the first is being searched from
	// unconfirmed counts the cycles through roots[0] that confirmation
	// refuted (graph.cut), fresh that a victim stopped waiting since the
	// view was read.
	unconfirmed int
	fresh       bool
	// deferred: a search hit a limit under Breaker Defer, or found a
	// cycle that did not confirm; a background pass is wanted.
	deferred bool
}

// verdict is a decision that changes the graph: fail victim's wait (by
// waiter and stamp, if it is still reported and active) with err.
type verdict struct {
	victim wait
	err    *txnlock.DeadlockError
	// assumed: a search hit a limit under Breaker AssumeDeadlock, and the
	// victim is the wait it searched from; else err.Cycle was confirmed.
	assumed bool
}

// decision is what the wrapper does once its mutex is released.
type decision struct {
	err      error                    // for the requester of Check, or nil
	reports  []*txnlock.DeadlockError // for OnDeadlock
	deferred bool                     // a full pass is wanted
}

func newCore(opts Options, src source) core {
	return core{opts: opts, src: src, g: newGraph(src), hist: newHistory(opts.HistorySize)}
}

func (c *core) limits() limits {
	return limits{depth: c.opts.MaxDepth, steps: c.opts.MaxSteps, time: c.opts.MaxSearchTime, clock: c.opts.Clock}
}

// start begins the search from w's wait, a wait of txn (a new wait's
// Check, or a Recheck), or with w nil from each wait of txn, which became
// a holder that others wait for, or gained blockers, while it waits (two
// Lock calls in flight): design.go's "When a cycle closes".
func (c *core) start(txn txnlock.TxnID, w detect.Waiter) search {
	clear(c.roots) // drop the last search's references
	c.roots = c.roots[:0]
	if w != nil {
		c.roots = append(c.roots, w)
	} else {
		c.src.waits(txn, false, func(x *wait, _ []txnlock.TxnID) { c.roots = append(c.roots, x.waiter) })
	}
	c.g.cuts = c.g.cuts[:0]
	return search{txn: txn, roots: c.roots, fresh: true}
}

// next runs s's searches until one decides to fail a wait, and returns
// that verdict; false once s is over. The wrapper fails the victim and
// calls settle before it calls next again.
//
// A cycle found is confirmed before a victim is chosen. When the victim is
// another transaction the search from the same wait runs again: the
// requester may close more than one cycle (it waits for a lock with
// several holders), and it is about to sleep, so no later search would
// start from it.
func (c *core) next(s *search) (verdict, bool) {
	for len(s.roots) > 0 {
		if s.fresh {
			c.g.reset()
			s.fresh = false
		}
		w := s.roots[0]
		root := c.g.node(s.txn)
		var e *edge
		for _, x := range root.waits {
			if x.waiter == w {
				e = x
			}
		}
		if e == nil {
			s.nextRoot(c) // unblocked, or failed as a victim
			continue
		}
		c.stats.Searches++
		c.rootBuf[0] = e
		res := c.g.walk(&c.stack, root, c.rootBuf[:], e.txn, c.limits(), true)
		c.rootBuf[0] = nil
		c.stats.Steps += uint64(res.steps)
		found := res.cycle
		if found == nil && res.trip == "" {
			// A cycle the search met that does not pass through w's
			// transaction in the view may pass through w's place in its
			// queue; if it is real, w's report may have closed it, and
			// no other search would start.
			found = res.met
		}
		switch {
		case found != nil:
			cycle, bad := c.confirm(found)
			if cycle == nil {
				// Not a cycle now: an edge rests on a request that is
				// leaving, or on one not yet reported. Once it has left
				// or reported, the cycle may be real with no new wait
				// to start a search: a pass is wanted. Meanwhile search
				// again without that edge, for another cycle through w,
				// a few times; the edge stays cut for the rest of the
				// search, also once a victim has made the view read
				// afresh, so that each false edge costs one search.
				c.stats.FalsePositivesAvoided++
				s.deferred = true
				if s.unconfirmed++; bad < 0 || s.unconfirmed > maxUnconfirmed {
					s.nextRoot(c)
					continue
				}
				c.g.cut(found[bad], found[(bad+1)%len(found)].txn)
				continue
			}
			return c.verdict(cycle), true
		case res.trip == "":
			s.nextRoot(c)
			continue
		}
		c.stats.Trips++
		if c.opts.Breaker == Defer {
			c.stats.Deferred++
			s.deferred = true
			s.nextRoot(c)
			continue
		}
		c.describe(res.path)
		return verdict{
			victim:  e.wait,
			assumed: true,
			err: &txnlock.DeadlockError{
				Victim:        e.txn,
				LimitExceeded: true,
				Limit:         res.trip,
				Path:          entries(res.path),
				Time:          c.opts.Clock.Now(),
				Seq:           c.hist.nextSeq(),
			},
		}, true
	}
	return verdict{}, false
}

// nextRoot moves s on to its next wait, with the false edges of the last
// forgotten.
func (s *search) nextRoot(c *core) {
	s.roots = s.roots[1:]
	s.unconfirmed = 0
	c.g.cuts = c.g.cuts[:0]
	s.fresh = true
}

// settle records what became of v, which the wrapper failed (delivered:
// the victim's wait was still reported and active, and got v.err) or
// could not fail (its wait ended meanwhile: the cycle is broken already).
// s is the search v came from, or nil for a background pass's.
func (c *core) settle(s *search, v verdict, delivered bool) {
	switch {
	case v.assumed:
		if delivered {
			c.stats.Assumed++
			c.hist.add(v.err)
		}
	case delivered:
		c.stats.Deadlocks++
		c.hist.add(v.err)
	default:
		c.stats.FalsePositivesAvoided++
	}
	if s == nil {
		return
	}
	if v.assumed || (delivered && v.victim.waiter == s.roots[0]) {
		s.nextRoot(c)
		return
	}
	// The victim stopped waiting, failed or not: read afresh and search
	// from the same wait again, for another cycle it closed.
	s.fresh = true
}

// maxUnconfirmed bounds the false edges one search from a wait cuts
// (graph.cut), each after a cycle through it was not confirmed, before it
// defers.
const maxUnconfirmed = 8

// confirm re-reads each edge of a cycle found in a view from live state,
// by the exact rule (Waiter.WaitsFor): cycle[i]'s wait must wait for
// cycle[i+1]'s transaction directly, or through requests that themselves
// wait (a request queued ahead of it on the same lock, which the
// contraction left out). It returns the cycle with those requests in it,
// each wait with whom it waits for directly, or nil and the index of the
// edge that is gone (-1: a member stopped waiting before the last edge was
// read).
func (c *core) confirm(cycle []*edge) ([]*edge, int) {
	var out []*edge
	for i, e := range cycle {
		path := c.exactPath(e, cycle[(i+1)%len(cycle)].txn)
		if path == nil {
			return nil, i
		}
		out = append(out, path...)
	}
	out = simpleCycle(out)
	for _, e := range out {
		if !e.active() {
			return nil, -1
		}
	}
	return out, 0
}

// exactPath returns the waits from wait e (the same wait, by waiter and
// stamp) to a wait that waits directly for target, by a breadth-first
// search over exact edges read from live state, or nil. It looks at no
// more than MaxSteps transactions.
func (c *core) exactPath(e *edge, target txnlock.TxnID) []*edge {
	type hop struct {
		e      *edge
		parent int
	}
	var hops []hop
	c.src.waits(e.txn, true, func(w *wait, who []txnlock.TxnID) {
		if w.waiter == e.waiter && w.seq == e.seq {
			m := exactEdge(w, who)
			m.member = true
			hops = append(hops, hop{m, -1})
		}
	})
	seen := map[txnlock.TxnID]bool{e.txn: true}
	for qi := 0; qi < len(hops); qi++ {
		h := hops[qi].e
		if slices.Contains(h.blockers, target) {
			var path []*edge
			for i := qi; i >= 0; i = hops[i].parent {
				path = append(path, hops[i].e)
			}
			slices.Reverse(path)
			return path
		}
		for _, t := range h.blockers {
			if seen[t] {
				continue
			}
			if seen[t] = true; len(seen) > c.opts.MaxSteps {
				return nil
			}
			c.src.waits(t, true, func(w *wait, who []txnlock.TxnID) {
				hops = append(hops, hop{exactEdge(w, who), qi})
			})
		}
	}
	return nil
}

func exactEdge(w *wait, who []txnlock.TxnID) *edge {
	return &edge{wait: *w, blockers: slices.Clone(who)}
}

// simpleCycle cuts a closed walk of waits down to a cycle in which each
// transaction appears once: paths joined end to end may cross.
func simpleCycle(walk []*edge) []*edge {
	at := make(map[txnlock.TxnID]int, len(walk))
	for i, e := range walk {
		if j, ok := at[e.txn]; ok {
			return walk[j:i]
		}
		at[e.txn] = i
	}
	return walk
}

// verdict chooses a victim among the waits of a confirmed cycle and
// returns the deadlock to fail it with.
func (c *core) verdict(cycle []*edge) verdict {
	c.describe(cycle)
	i := c.chooseVictim(cycle)
	v := cycle[i]
	// The report starts at the victim, whichever wait's search found the
	// cycle: the same deadlock reads the same.
	report := append(slices.Clone(cycle[i:]), cycle[:i]...)
	return verdict{victim: v.wait, err: &txnlock.DeadlockError{Victim: v.txn, Cycle: entries(report), Time: c.opts.Clock.Now(), Seq: c.hist.nextSeq()}}
}

// describe asks each wait what it requests and since when, and how many
// locks its transaction holds in every manager attached, for the victim
// policy and the report.
func (c *core) describe(es []*edge) {
	for _, e := range es {
		c.src.describe(e)
	}
}

// entries renders waits for a report.
func entries(es []*edge) []txnlock.CycleEntry {
	out := make([]txnlock.CycleEntry, len(es))
	for i, e := range es {
		out[i] = txnlock.CycleEntry{
			Txn:       e.txn,
			Lock:      e.lock,
			Blockers:  append([]txnlock.TxnID(nil), e.blockers...),
			LocksHeld: e.locksHeld,
			Since:     e.since,
		}
	}
	return out
}

// resolve confirms a cycle found in a snapshot against live state, and
// returns the verdict that breaks it, or nil if it is not confirmed, and
// the snapshot wait to drop before the pass searches its snapshot again:
// the victim's, or the first edge that did not hold.
//
// A cycle that does not confirm wants another pass, as an on-block
// search's does: it may rest on a request whose wait has ended but which
// is still queued, and once that request is out of its queue the
// requests behind it wait for what it waited for, which may close the
// cycle with no report that a search could start from.
func (c *core) resolve(cycle []*edge) (*verdict, *edge) {
	live, bad := c.confirm(cycle)
	if live == nil {
		c.stats.FalsePositivesAvoided++
		return nil, cycle[max(bad, 0)]
	}
	v := c.verdict(live)
	for _, e := range cycle {
		if e.waiter == v.victim.waiter {
			return &v, e
		}
	}
	return &v, cycle[0]
}

// backgroundPass searches a snapshot for cycles, breaking each one that is
// still live, until the snapshot has none left or maxCycles were handled.
// resolve is given by the caller so that the wrapper takes its mutex
// around it only; the search itself runs outside the mutex. more reports
// that maxCycles were handled and another pass should follow.
func backgroundPass(snap *graph, stack *[]frame, maxCycles int, resolve func([]*edge) *edge) (steps int, more bool) {
	for range maxCycles {
		cycle, n := snap.findCycle(stack)
		steps += n
		if cycle == nil {
			return steps, false
		}
		snap.removeEdge(resolve(cycle))
	}
	return steps, true
}

// chooseVictim applies the victim policy; ties go to the youngest
// transaction, then to the newest wait. The wait that closed the cycle is
// the newest one, by stamp: the request queued last, whichever member's
// search found the cycle (an earlier waiter's report may arrive after
// the closing request's own search, which then found nothing).
//
// Only the waits the search found are candidates, not the requests that
// confirmation added between them: such a request is queued ahead of a
// member on the member's lock, and once it is gone the member may wait
// for the same holders directly, the deadlock still there.
func (c *core) chooseVictim(cycle []*edge) int {
	members := slices.ContainsFunc(cycle, func(e *edge) bool { return e.member })
	candidate := func(e *edge) bool { return e.member || !members }
	var closer *edge
	for _, e := range cycle {
		if candidate(e) && (closer == nil || e.seq > closer.seq) {
			closer = e
		}
	}
	prio := func(e *edge) int64 {
		if c.opts.Priority == nil {
			return 0
		}
		return c.opts.Priority(e.txn)
	}
	// better reports whether a is a better victim than b.
	var better func(a, b *edge) bool
	switch c.opts.Victim {
	case VictimRequester:
		return slices.Index(cycle, closer)
	case VictimYoungest:
		better = func(a, b *edge) bool {
			if pa, pb := prio(a), prio(b); pa != pb {
				return pa < pb
			}
			return a.txn > b.txn
		}
	case VictimFewestLocks:
		better = func(a, b *edge) bool {
			if a.locksHeld != b.locksHeld {
				return a.locksHeld < b.locksHeld
			}
			return a.txn > b.txn
		}
	case VictimPriority:
		better = func(a, b *edge) bool {
			if pa, pb := prio(a), prio(b); pa != pb {
				return pa < pb
			}
			if (a == closer) != (b == closer) {
				return a == closer
			}
			return a.txn > b.txn
		}
	}
	vi := slices.Index(cycle, closer)
	for i, e := range cycle {
		if v := cycle[vi]; candidate(e) && (better(e, v) || (!better(v, e) && e.seq > v.seq)) {
			vi = i
		}
	}
	return vi
}
