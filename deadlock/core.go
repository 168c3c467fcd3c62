package deadlock

import (
	"fmt"
	"slices"

	"github.com/txnlock/txnlock"
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
	// one, and those that ended but were not yet Unblocked or forgotten
	// by a probe (registry.go).
	Waits int
}

// String renders the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("searches=%d steps=%d trips=%d deadlocks=%d assumed=%d deferred=%d background_passes=%d false_positives_avoided=%d waits=%d",
		s.Searches, s.Steps, s.Trips, s.Deadlocks, s.Assumed, s.Deferred, s.BackgroundPasses, s.FalsePositivesAvoided, s.Waits)
}

// core is the deterministic heart of the detector: its searches, the
// counters and the history, with every decision made by a plain method
// call. It has no lock, starts no goroutine and reads time only from
// opts.Clock; it reads the graph through its source (the registry, which
// asks the managers), and fails victims through it. Detector wraps it with
// a mutex.
type core struct {
	opts    Options
	src     source
	g       graph // the live view, read afresh by every search
	hist    history
	stats   Stats
	stack   []frame // reused by every search
	rootBuf [1]*edge

	// testingOnConfirm, if set, sees every confirmed cycle before its
	// victim is failed; testingOnBreak sees it once the victim is failed
	// (tests only).
	testingOnConfirm, testingOnBreak func(*txnlock.DeadlockError)
}

// decision is what the wrapper must do after the core decided, with its
// mutex released. The victims were failed already, while the core held
// it, so that no other search breaks the same cycle again.
type decision struct {
	err      error                    // for the requester of Check, or nil
	reports  []*txnlock.DeadlockError // for OnDeadlock
	deferred bool                     // a full pass is wanted
}

func (d *decision) merge(o decision) {
	if o.err != nil {
		d.err = o.err
	}
	d.reports = append(d.reports, o.reports...)
	d.deferred = d.deferred || o.deferred
}

func newCore(opts Options, src source) core {
	return core{opts: opts, src: src, g: newGraph(src), hist: newHistory(opts.HistorySize)}
}

func (c *core) limits() limits {
	return limits{depth: c.opts.MaxDepth, steps: c.opts.MaxSteps, time: c.opts.MaxSearchTime, clock: c.opts.Clock}
}

// check is the on-block search from w's wait, on a live view; txn is w's
// transaction, so that check calls none of w's methods, which may have
// been recycled (Detector.unblock's searches). A cycle it finds is
// confirmed before a victim is chosen. When the victim is another
// transaction the search runs again: the requester may close more than
// one cycle (it waits for a lock with several holders), and it is about
// to sleep, so no later search would start from it.
func (c *core) check(w txnlock.Waiter, txn txnlock.TxnID) decision {
	var d decision
	c.g.reset()
	c.g.cuts = c.g.cuts[:0]
	for unconfirmed := 0; ; {
		root := c.g.node(txn)
		var e *edge
		for _, x := range root.waits {
			if x.waiter == w {
				e = x
			}
		}
		if e == nil {
			return d // unblocked, or failed as a victim
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
				// check, also once a victim has made the view read
				// afresh, so that each false edge costs one search.
				c.stats.FalsePositivesAvoided++
				d.deferred = true
				if unconfirmed++; bad < 0 || unconfirmed > maxUnconfirmed {
					return d
				}
				c.g.cut(found[bad], found[(bad+1)%len(found)].txn)
				continue
			}
			b, _ := c.breakCycle(cycle, w)
			d.merge(b)
			if d.err != nil || len(b.reports) == 0 {
				return d
			}
			c.g.reset() // a victim stopped waiting: read afresh
			continue
		case res.trip == "":
			return d
		}
		c.stats.Trips++
		if c.opts.Breaker == Defer {
			c.stats.Deferred++
			d.deferred = true
			return d
		}
		c.describe(res.path)
		err := &txnlock.DeadlockError{
			Victim:        e.txn,
			LimitExceeded: true,
			Limit:         res.trip,
			Path:          entries(res.path),
			Time:          c.opts.Clock.Now(),
			Seq:           c.hist.nextSeq(),
		}
		if c.src.fail(e.txn, e.waiter, e.seq, err) {
			c.stats.Assumed++
			c.hist.add(err)
			d.err = err
			d.reports = append(d.reports, err)
		}
		return d
	}
}

// maxUnconfirmed bounds the false edges one check cuts (graph.cut), each
// after a cycle through it was not confirmed, before it defers.
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

// breakCycle chooses a victim among the waits of a confirmed cycle, fails
// it through the source (so that no other search breaks the same cycle
// again), and records the deadlock. requester is the waiter whose Check
// found the cycle, or nil in a background pass. It returns the victim; a
// decision without reports if the victim's wait ended meanwhile (the
// cycle is broken already).
func (c *core) breakCycle(cycle []*edge, requester txnlock.Waiter) (decision, *edge) {
	c.describe(cycle)
	v := cycle[c.chooseVictim(cycle)]
	err := &txnlock.DeadlockError{Victim: v.txn, Cycle: entries(cycle), Time: c.opts.Clock.Now(), Seq: c.hist.nextSeq()}
	if c.testingOnConfirm != nil {
		c.testingOnConfirm(err)
	}
	if !c.src.fail(v.txn, v.waiter, v.seq, err) {
		c.stats.FalsePositivesAvoided++
		return decision{}, v
	}
	if c.testingOnBreak != nil {
		c.testingOnBreak(err)
	}
	d := decision{reports: []*txnlock.DeadlockError{err}}
	if requester != nil && v.waiter == requester {
		d.err = err
	}
	c.hist.add(err)
	c.stats.Deadlocks++
	return d, v
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

// resolve confirms a cycle found in a snapshot against live state and
// breaks it if it is there. It returns the snapshot wait to drop before
// the pass searches its snapshot again: the victim's, or the first.
//
// A cycle that does not confirm wants another pass, as an on-block
// search's does: it may rest on a request whose wait has ended but which
// is still queued, and once that request is out of its queue the
// requests behind it wait for what it waited for, which may close the
// cycle with no report that a search could start from.
func (c *core) resolve(cycle []*edge) (decision, *edge) {
	live, bad := c.confirm(cycle)
	if live == nil {
		c.stats.FalsePositivesAvoided++
		return decision{deferred: true}, cycle[max(bad, 0)]
	}
	d, v := c.breakCycle(live, nil)
	for _, e := range cycle {
		if e.waiter == v.waiter {
			return d, e
		}
	}
	return d, cycle[0]
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
