package deadlock

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
)

// maxCyclesPerPass bounds the cycles one background pass breaks before it
// takes a fresh snapshot (each costs a search of the snapshot).
const maxCyclesPerPass = 64

// passRestFactor: the background goroutine rests this many times as long
// as its last pass took before it starts another.
const passRestFactor = 10

// Detector is a deadlock detector shared by any number of lock managers
// (txnlock.Detector). It is safe for concurrent use.
//
// Lock order: a manager's locks, then Detector.mu. The detector never
// calls a manager. It calls Waiter.Fail with mu held (Fail takes no lock
// and never blocks): a victim's waiter cannot finish its Wait, whose
// Unblock takes mu, and be recycled in between. It calls
// Options.OnDeadlock with mu released.
type Detector struct {
	opts    Options
	nextRes atomic.Uint64
	stamps  atomic.Uint64 // Stamp's counter
	closed  atomic.Bool   // Close was called
	// dorm is the graph's dormant table: Block and Unblock of a wait that
	// no search can reach take one of its slot mutexes, not mu.
	dorm *dormant

	// kick wakes the background goroutine (capacity 1: kicks coalesce).
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu struct {
		sync.Mutex
		// c is the graph, counters and history.
		c core
	}

	// passMu serializes background passes (the goroutine's and those a
	// test runs by hand) and guards passStack.
	passMu    sync.Mutex
	passStack []frame
	passFlat  []flatWait
	passArena []txnlock.TxnID

	// testingAfterSnapshot, if set, runs between a background pass's
	// snapshot and its search (tests only).
	testingAfterSnapshot func()
}

var _ txnlock.Detector = (*Detector)(nil)

// New returns a Detector, and starts its background goroutine unless
// opts.Detection is Off. Close stops it.
func New(opts Options) (*Detector, error) {
	return newDetector(opts, true)
}

func newDetector(opts Options, goroutine bool) (*Detector, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d := &Detector{
		opts: opts,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	d.mu.c = newCore(opts)
	d.dorm = d.mu.c.g.dorm
	if goroutine && opts.Detection != Off {
		go d.run()
	} else {
		close(d.done)
	}
	return d, nil
}

// Options returns the options in use (defaults filled in).
func (d *Detector) Options() Options { return d.opts }

// NewResource returns a fresh resource id (txnlock.Detector).
func (d *Detector) NewResource() txnlock.ResourceID {
	return txnlock.ResourceID(d.nextRes.Add(1))
}

// Stamp returns the next wait stamp (txnlock.Detector).
func (d *Detector) Stamp() uint64 { return d.stamps.Add(1) }

// Block records that e.Waiter waits for e.Resource, and reports whether
// the wait needs a Check (txnlock.Detector). A closed detector refuses the
// wait: it fails the waiter with txnlock.ErrClosed.
func (d *Detector) Block(e txnlock.WaitEdge) bool {
	if d.opts.Detection == Off {
		return false
	}
	if d.closed.Load() {
		e.Waiter.Fail(txnlock.ErrClosed)
		return false
	}
	if e.Stamp == 0 {
		e.Stamp = d.Stamp()
	}
	if d.dorm.park(e) {
		return false // its transaction blocks nothing: no search can reach it
	}
	d.mu.Lock()
	needsCheck := d.mu.c.block(e)
	d.mu.Unlock()
	return needsCheck
}

// Unblock forgets w's wait; a no-op if the detector does not know it
// (txnlock.Detector).
func (d *Detector) Unblock(w txnlock.Waiter) {
	if d.opts.Detection == Off || d.dorm.unpark(w) {
		return
	}
	d.mu.Lock()
	d.mu.c.g.unblock(w)
	d.mu.Unlock()
}

// SetBlockers replaces the blockers of r (txnlock.Detector).
func (d *Detector) SetBlockers(r txnlock.ResourceID, blockers []txnlock.TxnID) {
	if d.opts.Detection == Off {
		return
	}
	d.mu.Lock()
	suspect := d.mu.c.setBlockers(r, blockers)
	d.mu.Unlock()
	if suspect {
		d.wake()
	}
}

// DropResource forgets r (txnlock.Detector).
func (d *Detector) DropResource(r txnlock.ResourceID) {
	if d.opts.Detection == Off {
		return
	}
	d.mu.Lock()
	d.mu.c.g.dropResource(r)
	d.mu.Unlock()
}

// DetectDelay is Options.DetectDelay, or -1 (never check) when Detection is Off
// (txnlock.Detector).
func (d *Detector) DetectDelay() time.Duration {
	if d.opts.Detection == Off {
		return -1
	}
	return d.opts.DetectDelay
}

// Check searches for a cycle through w's wait (OnBlock), or wakes the
// background pass (Background). It returns the *txnlock.DeadlockError if
// w must give up; other victims are failed here (txnlock.Detector).
func (d *Detector) Check(w txnlock.Waiter) error {
	switch d.opts.Detection {
	case Off:
		return nil
	case Background:
		d.mu.Lock()
		d.mu.c.passWanted = true
		d.mu.Unlock()
		d.wake()
		return nil
	}
	d.mu.Lock()
	dec := d.mu.c.check(w)
	failVictims(dec)
	d.mu.Unlock()
	d.apply(dec)
	return dec.err
}

// failVictims fails the victims of a decision. d.mu is held.
func failVictims(dec decision) {
	for _, v := range dec.victims {
		v.w.Fail(v.err)
	}
}

// apply carries out the rest of a decision with mu released.
func (d *Detector) apply(dec decision) {
	if dec.deferred {
		d.wake()
	}
	if d.opts.OnDeadlock != nil {
		for _, r := range dec.reports {
			d.opts.OnDeadlock(r)
		}
	}
}

func (d *Detector) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (d *Detector) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.mu.c.stats
	s.Parked = d.dorm.count()
	s.Waits = d.mu.c.g.nWaits + s.Parked
	return s
}

// History returns copies of the most recent deadlocks (Options.HistorySize
// of them), oldest first, newest last. A deadlock is recorded when it is
// decided; a victim whose wait ended just before (granted, timed out) does
// not see the error, but the cycle was there when it was decided.
func (d *Detector) History() []*txnlock.DeadlockError {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.c.hist.list()
}

// Close stops the background goroutine and waits for it. Waits already
// in the graph are still searched on-block; a search deferred after Close
// is left to the waiter's timeout. A wait reported after Close is refused:
// its request fails with txnlock.ErrClosed. Close the managers that use a
// detector before it. A second Close returns txnlock.ErrClosed, as every
// Close in txnlock does.
func (d *Detector) Close() error {
	if d.closed.Swap(true) {
		return fmt.Errorf("deadlock: close detector: %w", txnlock.ErrClosed)
	}
	d.closeOnce.Do(func() { close(d.stop) })
	<-d.done
	return nil
}

// run is the background goroutine. When woken it first searches from the
// suspects (checkSuspects), then runs a full pass if one is wanted (a
// deferred search, or a new wait with Background detection); every
// BackgroundInterval it runs a full pass anyway. After a full pass no
// other starts for passRestFactor times as long as it took (at most
// BackgroundInterval), so that a busy graph, where every wait wakes it,
// spends at most about a tenth of one processor and of the mutex's time on
// passes; the wishes that arrive meanwhile coalesce, and suspects are
// still searched at once.
func (d *Detector) run() {
	defer close(d.done)
	clock, interval := d.opts.Clock, d.opts.BackgroundInterval
	next := clock.Now().Add(interval) // the next periodic pass
	var restUntil time.Time
	wantPass := false
	for {
		due := next
		if wantPass && restUntil.Before(due) {
			due = restUntil
		}
		t := clock.NewTimer(due.Sub(clock.Now()))
		select {
		case <-d.stop:
			t.Stop()
			return
		case <-d.kick:
			t.Stop()
		case <-t.C():
		}
		if d.checkSuspects() {
			wantPass = true
		}
		now := clock.Now()
		if !now.Before(next) {
			wantPass = true
			next = now.Add(interval)
		}
		if wantPass && !now.Before(restUntil) {
			d.backgroundPass()
			end := clock.Now()
			restUntil = end.Add(min(passRestFactor*end.Sub(now), interval))
			wantPass = false
		}
	}
}

// checkSuspects runs the suspects' searches and reports whether a full
// pass is wanted (and clears the wish: the pass is about to run).
func (d *Detector) checkSuspects() (passWanted bool) {
	d.mu.Lock()
	var dec decision
	if len(d.mu.c.suspects) > 0 {
		dec = d.mu.c.checkSuspects()
	}
	passWanted = d.mu.c.passWanted
	d.mu.c.passWanted = false
	failVictims(dec)
	d.mu.Unlock()
	d.apply(dec)
	return passWanted
}

// backgroundPass takes a snapshot of the graph under mu, searches it with
// mu released and without limits, and breaks each cycle it finds that is
// still in the live graph.
func (d *Detector) backgroundPass() {
	d.passMu.Lock()
	defer d.passMu.Unlock()
	d.mu.Lock()
	d.mu.c.stats.BackgroundPasses++
	if d.mu.c.g.nWaits == 0 {
		d.mu.Unlock()
		return
	}
	d.passFlat, d.passArena = d.mu.c.g.flatten(d.passFlat[:0], d.passArena[:0])
	d.mu.Unlock()
	snap := snapshotOf(d.passFlat, d.passArena)
	clear(d.passFlat) // drop the waiter references
	if d.testingAfterSnapshot != nil {
		d.testingAfterSnapshot()
	}

	steps, more := backgroundPass(snap, &d.passStack, maxCyclesPerPass, func(cycle []*edge) *edge {
		d.mu.Lock()
		dec, drop := d.mu.c.resolve(cycle)
		failVictims(dec)
		d.mu.Unlock()
		d.apply(dec)
		return drop
	})
	d.mu.Lock()
	d.mu.c.stats.Steps += uint64(steps)
	d.mu.Unlock()
	if more {
		d.wake()
	}
}
