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
	// FalsePositivesAvoided counts cycles a background pass found in its
	// snapshot that were gone from the live graph when it re-checked them.
	FalsePositivesAvoided uint64
	Waits                 int // waits recorded now, in the graph or parked
	Parked                int // of Waits, those parked outside the graph (dormant.go)
}

// String renders the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("searches=%d steps=%d trips=%d deadlocks=%d assumed=%d deferred=%d background_passes=%d false_positives_avoided=%d waits=%d parked=%d",
		s.Searches, s.Steps, s.Trips, s.Deadlocks, s.Assumed, s.Deferred, s.BackgroundPasses, s.FalsePositivesAvoided, s.Waits, s.Parked)
}

// core is the deterministic heart of the detector: the live graph, the
// counters and the history, with every decision made by a plain method
// call that returns what to do. It has no lock, starts no goroutine and
// reads time only from opts.Clock. Detector wraps it with a mutex.
type core struct {
	opts    Options
	g       graph
	hist    history
	stats   Stats
	stack   []frame // reused by every search
	rootBuf [1]*edge

	// suspects are waiting transactions that SetBlockers made blockers of
	// a resource with waiters: a cycle through them may have formed
	// without a new wait, so no Check will look. The background goroutine
	// searches from each (checkSuspects).
	suspects []txnlock.TxnID
	// passWanted asks the background goroutine for a full pass (a search
	// was deferred, or a wait began with Background detection).
	passWanted bool

	// testingOnBreak, if set, sees every cycle the moment it is broken,
	// with the graph still as it was found (tests only).
	testingOnBreak func(*txnlock.DeadlockError)
}

// decision is what the wrapper must do after the core decided: fail the
// victims before it releases its mutex (while their waits are still in the
// graph, no victim's Wait can have returned and recycled its waiter), the
// rest after.
type decision struct {
	err      error                    // for the requester of Check, or nil
	victims  []victimErr              // other waiters to fail
	reports  []*txnlock.DeadlockError // for OnDeadlock
	deferred bool                     // wake the background pass
}

type victimErr struct {
	w   txnlock.Waiter
	err error
}

func newCore(opts Options) core {
	return core{opts: opts, g: newGraph(), hist: newHistory(opts.HistorySize)}
}

func (c *core) limits() limits {
	return limits{depth: c.opts.MaxDepth, steps: c.opts.MaxSteps, time: c.opts.MaxSearchTime, clock: c.opts.Clock}
}

// check is the on-block search from w's wait. When the victim of a cycle
// is another transaction, the search runs again: the requester may close
// more than one cycle (it waits for a lock with several holders), and it
// is about to sleep, so no later search would start from it.
func (c *core) check(w txnlock.Waiter) decision {
	var d decision
	for retries := 0; ; {
		e := c.g.find(w)
		if e == nil {
			return d // unblocked, or failed as a victim
		}
		c.stats.Searches++
		if n, ok := c.deadEnd(e); ok {
			// The usual case, a queue behind running holders: no cycle.
			c.stats.Steps += uint64(n)
			return d
		}
		c.rootBuf[0] = e
		res := c.g.walk(&c.stack, e.node, c.rootBuf[:], e.txn, c.limits(), true)
		c.rootBuf[0] = nil
		c.stats.Steps += uint64(res.steps)
		switch {
		case res.cycle != nil && !allActive(res.cycle):
			// A member was granted or failed during the search: look
			// again without it, a few times, then leave it to a pass.
			if retries++; retries > maxStaleRetries {
				c.passWanted = true
				d.deferred = true
				return d
			}
			continue
		case res.cycle != nil:
			b, _ := c.breakCycle(res.cycle, e)
			d.err = b.err
			d.victims = append(d.victims, b.victims...)
			d.reports = append(d.reports, b.reports...)
			if d.err != nil {
				return d
			}
			continue
		case res.trip == "":
			return d
		}
		c.stats.Trips++
		if c.opts.Breaker == Defer {
			c.stats.Deferred++
			c.passWanted = true
			d.deferred = true
			return d
		}
		c.stats.Assumed++
		err := &txnlock.DeadlockError{
			Victim:        e.txn,
			LimitExceeded: true,
			Limit:         res.trip,
			Path:          entries(res.path),
			Time:          c.opts.Clock.Now(),
		}
		c.g.removeEdge(e)
		c.hist.add(err)
		d.err = err
		d.reports = append(d.reports, err)
		return d
	}
}

// block records e and reports whether the wait needs a Check: whether a
// cycle may run through it now, because a blocker of its resource is
// itself waiting (deadEnd). When none is, a cycle through e can only form
// later, by an edge added after e: a Block whose resource has e's
// transaction among its blockers (e's transaction is waiting, so that
// Block needs a Check, whose search finds e), or a SetBlockers that makes
// a waiting transaction a blocker (a suspect). Either search sees e. So
// the usual wait, a queue behind running holders, is checked here, under
// the mutex Block takes anyway, and its waiter never takes it for Check.
func (c *core) block(e txnlock.WaitEdge) bool {
	ed := c.g.block(e)
	if ed == nil {
		return false
	}
	_, dead := c.deadEnd(ed)
	return !dead
}

// setBlockers installs r's blockers and reports whether it made a waiting
// transaction a new blocker of a resource that has waits (a suspect).
//
// That is how a cycle forms without a new wait: a transaction that waits
// in two places at once is granted one of them, or a manager's
// SetBlockers reaches the detector after the new blocker's goroutine has
// already blocked elsewhere and been checked against the old blockers.
// That check saw no cycle; the SetBlockers closes one. A grantee whose
// goroutine has not yet Unblocked its finished wait is no suspect.
func (c *core) setBlockers(id txnlock.ResourceID, blockers []txnlock.TxnID) bool {
	r := c.g.resource(id)
	added := c.g.setBlockers(r, blockers) // promotes their parked waits first
	found := false
	if r.waits > 0 && len(c.g.txns) > 0 {
		for _, b := range added {
			if c.g.waiting(b) {
				c.suspects = append(c.suspects, b)
				found = true
			}
		}
	}
	return found
}

// checkSuspects searches from every suspect, on the live graph and within
// the limits, for a cycle back to it, and breaks each one found (the
// victim policy sees no requester). A search that trips asks for a full
// pass, whatever the breaker: a suspect is not a requester that could be
// assumed deadlocked.
func (c *core) checkSuspects() decision {
	var d decision
	suspects := c.suspects
	c.suspects = nil
	for _, t := range suspects {
		for {
			n := c.g.txns[t]
			if n == nil {
				break
			}
			c.stats.Searches++
			res := c.g.walk(&c.stack, n, n.waits, t, c.limits(), true)
			c.stats.Steps += uint64(res.steps)
			if res.trip != "" {
				c.stats.Trips++
				c.stats.Deferred++
				c.passWanted = true
				break
			}
			if res.cycle == nil {
				break
			}
			if !allActive(res.cycle) {
				c.passWanted = true // a member ended during the search
				break
			}
			b, _ := c.breakCycle(res.cycle, nil)
			d.victims = append(d.victims, b.victims...)
			d.reports = append(d.reports, b.reports...)
		}
	}
	return d
}

// deadEnd reports whether none of the blockers of e's resource (e's own
// transaction aside) is waiting, so no cycle can run through e and the
// search can stop before it starts, and how many blockers it looked at.
// Resources with more blockers than a search may look at without a limit
// check are left to the search.
func (c *core) deadEnd(e *edge) (int, bool) {
	if n := len(e.res.blockers); n > timeCheckEvery || n > c.opts.MaxSteps {
		return 0, false
	}
	for i, b := range e.res.blockers {
		if b != e.txn && c.g.waiting(b) {
			return i + 1, false
		}
	}
	return len(e.res.blockers), true
}

// maxStaleRetries bounds the searches one check repeats because a member
// of the cycle it found stopped waiting meanwhile.
const maxStaleRetries = 3

// allActive reports whether every wait of cycle is still active (checked
// again just before a cycle is broken: the search checked each as it
// went, but a member may have been granted since).
func allActive(cycle []*edge) bool {
	for _, e := range cycle {
		if !e.active() {
			return false
		}
	}
	return true
}

// breakCycle chooses a victim among the waits of cycle, removes its wait
// from the graph (so that no other search breaks the same cycle again) and
// says whom to fail. requester is the wait whose Check found the cycle, or
// nil in a background pass.
// It returns the index of the victim in cycle; the victim's edge is
// recycled and must not be used after.
func (c *core) breakCycle(cycle []*edge, requester *edge) (decision, int) {
	vi := c.chooseVictim(cycle)
	v := cycle[vi]
	err := &txnlock.DeadlockError{Victim: v.txn, Cycle: entries(cycle), Time: c.opts.Clock.Now()}
	if c.testingOnBreak != nil {
		c.testingOnBreak(err)
	}
	d := decision{reports: []*txnlock.DeadlockError{err}}
	if v == requester {
		d.err = err
	} else {
		d.victims = []victimErr{{v.waiter, err}}
	}
	c.g.removeEdge(v)
	c.hist.add(err)
	c.stats.Deadlocks++
	return d, vi
}

// entries renders waits for a report.
func entries(es []*edge) []txnlock.CycleEntry {
	out := make([]txnlock.CycleEntry, len(es))
	for i, e := range es {
		out[i] = txnlock.CycleEntry{
			Txn:       e.txn,
			Lock:      e.lock,
			Holders:   append([]txnlock.TxnID(nil), e.res.blockers...),
			LocksHeld: e.locksHeld,
			Since:     e.since,
		}
	}
	return out
}

// resolve re-checks a cycle found in a snapshot against the live graph and
// breaks it if it is still there. It returns the snapshot wait to drop
// before the pass searches its snapshot again: the victim's, or the first
// wait that is gone or no longer blocked by the next member.
func (c *core) resolve(cycle []*edge) (decision, *edge) {
	live := make([]*edge, len(cycle))
	for i, s := range cycle {
		next := cycle[(i+1)%len(cycle)].txn
		// The same wait, not only the same waiter: a recycled waiter
		// may wait again, elsewhere (lockwait.Waiter.Release).
		l := c.g.findWait(s.txn, s.waiter)
		if l == nil || l.seq != s.seq || !l.active() || l.res.id != s.res.id || next == l.txn || !l.res.blocks(next) {
			c.stats.FalsePositivesAvoided++
			return decision{}, s
		}
		live[i] = l
	}
	d, vi := c.breakCycle(live, nil)
	return d, cycle[vi]
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
func (c *core) chooseVictim(cycle []*edge) int {
	var closer *edge
	for _, e := range cycle {
		if closer == nil || e.seq > closer.seq {
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
	vi := 0
	for i, e := range cycle {
		if v := cycle[vi]; better(e, v) || (!better(v, e) && e.seq > v.seq) {
			vi = i
		}
	}
	return vi
}
