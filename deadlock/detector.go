package deadlock

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// maxCyclesPerPass bounds the cycles one background pass breaks before it
// takes a fresh snapshot (each costs a search of the snapshot).
const maxCyclesPerPass = 64

// passRestFactor: the background goroutine rests this many times as long
// as its last pass took before it starts another.
const passRestFactor = 10

// Detector is a deadlock detector shared by any number of lock managers
// (txnlock.Detector). It is safe for concurrent use.
type Detector struct {
	// Lock order: passMu, then mu, then one registry slot's mutex, then a
	// manager's latch (the detector's questions to a waiter). A manager
	// never calls the detector with a latch held, but for Stamp, which
	// takes no lock. Victims are failed (Waiter.Fail, which takes no lock)
	// with mu and the victim's slot held; Options.OnDeadlock runs with
	// every lock released.

	opts Options
	// stamps is Stamp's counter, which every wait queued writes, on a
	// cache line of its own: the fields that every Block, Unblock and
	// DetectDelay read must not move between processors with it.
	_      [64]byte
	stamps atomic.Uint64
	_      [64]byte
	closed atomic.Bool // Close was called
	// passWish asks the background goroutine for a full pass: a search was
	// deferred or not confirmed, or a wait began with Background
	// detection. It is not under mu, which a busy graph's searches queue
	// on: a pass must not wait behind them to learn that it is wanted.
	passWish atomic.Bool
	// passes counts the background passes run (Stats.BackgroundPasses).
	passes atomic.Uint64
	// reg holds the reported waits. Block and Unblock take one of its
	// slot mutexes, not mu.
	reg *registry
	// att are the managers attached (Attach), asked for lock counts.
	att attachments

	// kick wakes the background goroutine (capacity 1: kicks coalesce).
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu struct {
		sync.Mutex
		// c is the searches, counters and history.
		c core
	}

	// passMu serializes background passes (the goroutine's and those a
	// test runs by hand) and guards passStack, passFlat and passArena.
	passMu    sync.Mutex
	passStack []frame
	passFlat  []flatWait
	passArena []txnlock.TxnID

	// testingAfterSnapshot, if set, runs between a background pass's
	// snapshot and its search; testingOnConfirm sees every confirmed cycle
	// before its victim is failed, and testingOnBreak once the victim is
	// failed, with mu held (tests only).
	testingAfterSnapshot             func()
	testingOnConfirm, testingOnBreak func(*txnlock.DeadlockError)
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
		reg:  new(registry),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	d.mu.c = newCore(opts, &liveSource{r: d.reg, att: &d.att})
	if goroutine && opts.Detection != Off {
		go d.run()
	} else {
		close(d.done)
	}
	return d, nil
}

// Options returns the options in use (defaults filled in).
func (d *Detector) Options() Options { return d.opts }

// block records e's wait, and reports whether it needs a Check
// (detect.Graph.Block): whether a transaction that blocks the wait's lock
// now is itself waiting. Those are e.Blockers, whom the wait was queued
// behind, unless the lock was granted since (Waiter.Regranted): then it
// asks (Waiter.Blockers), and whether anyone may wait for the wait's
// transaction: not if the wait is lone and the transaction holds no lock
// (design.go, "A wait nobody waits for"). A closed detector
// refuses the wait: it fails the waiter with txnlock.ErrClosed.
//
// When none is, no cycle runs through the wait now, and one can only
// close later by another event whose own search sees this wait (the
// design.go, "When a cycle closes"). So the usual wait, a queue behind
// running holders, costs its own slot's mutex here, a holder's if the
// holder's slot holds a wait (on a hot lock, the holder's wait that was
// granted a moment ago, which the probe forgets), and a question to the
// manager if the lock changed hands meanwhile; its Unblock takes a mutex
// only if no probe forgot the wait first.
func (d *Detector) block(e detect.Edge) bool {
	if d.opts.Detection == Off || e.Waiter == nil {
		return false
	}
	if d.closed.Load() {
		e.Waiter.Fail(txnlock.ErrClosed)
		return false
	}
	if !e.Waiter.Active() {
		return false // granted or failed before it came: nothing to record
	}
	seq := e.Stamp
	if seq == 0 {
		seq = d.stamps.Add(1)
	}
	txn := e.Waiter.Txn()
	if d.reg.add(e.Waiter, txn, seq) {
		// An earlier wait of txn was left unsearched as lone; this one
		// may lead to whoever waits for that wait's request (the
		// design.go, "A wait nobody waits for").
		d.checkWaitsOf(txn)
		return false
	}
	// Whom the wait is blocked by now. A grant since it was queued may
	// have given the lock to a transaction that already reported a wait
	// of its own, whose Block then did not see this one; one of the two
	// Blocks must see the other (design.go, "When a cycle closes").
	blockers := e.Blockers
	if e.Waiter.Regranted() {
		var ok bool
		if blockers, ok = e.Waiter.Blockers(nil); !ok {
			return false // over: its Unblock is on the way
		}
	}
	for _, b := range blockers {
		if b != txn && d.reg.waiting(b) {
			return !d.lone(e)
		}
	}
	return false
}

// lone reports whether nobody can wait for the transaction of e, a wait
// just recorded, so that a cycle through it cannot have closed (the
// design.go, "A wait nobody waits for"): its request was queued behind
// every older one, no wait was stamped after it (read now, after the
// wait was recorded: a request queued behind it later reports later and
// sees it), its transaction holds no lock and has no other wait reported
// (markLone, which marks the wait, so that a later wait of the
// transaction searches from it).
func (d *Detector) lone(e detect.Edge) bool {
	if e.Stamp == 0 || e.MaySkip || d.stamps.Load() != e.Stamp {
		return false
	}
	txn := e.Waiter.Txn()
	return d.att.locksHeld(txn) == 0 && d.reg.markLone(e.Waiter, txn)
}

// unblock forgets w's wait (detect.Graph.Unblock). If w's transaction has
// another wait in flight, the wait that just ended may have been granted,
// making the transaction a holder that others wait for: a cycle through
// its other wait may have closed without a new wait, so Unblock searches
// from it, whether w's wait was still recorded or not (a probe forgot it,
// or it was granted before its Block).
func (d *Detector) unblock(w detect.Waiter) {
	if d.opts.Detection == Off {
		return
	}
	if others := d.reg.remove(w); others {
		d.checkWaitsOf(w.Txn())
	}
}

// passed searches from txn's waits, if it has any, after a request of
// txn was granted at once past queued requests (detect.Graph.Passed):
// if txn waits elsewhere, those requests' new edges to it may close a
// cycle.
func (d *Detector) passed(txn txnlock.TxnID) {
	if d.opts.Detection == Off || !d.reg.waiting(txn) {
		return
	}
	d.checkWaitsOf(txn)
}

// checkWaitsOf searches from each of txn's waits: txn became a holder
// that others wait for, or gained blockers, while it waits (two Lock
// calls in flight).
func (d *Detector) checkWaitsOf(txn txnlock.TxnID) {
	if d.opts.DetectDelay < 0 {
		return
	}
	d.checkFrom(txn, nil)
}

// check searches for a cycle through w's wait, a wait of txn (OnBlock),
// or wakes the background pass (Background). It returns the
// *txnlock.DeadlockError if w must give up; other victims are failed here
// (detect.Graph.Check).
func (d *Detector) check(w detect.Waiter, txn txnlock.TxnID) error {
	return d.checkFrom(txn, w)
}

// checkFrom runs the core's search from w's wait, a wait of txn, or with w
// nil from each wait of txn (core.start), under mu, and carries out its
// verdicts: each victim is failed under mu, so that no other search
// breaks the same cycle again. It returns the error of w's wait if w is a
// victim. With Background detection it wakes the background pass instead.
func (d *Detector) checkFrom(txn txnlock.TxnID, w detect.Waiter) error {
	switch d.opts.Detection {
	case Off:
		return nil
	case Background:
		d.passWish.Store(true)
		d.wake()
		return nil
	}
	var dec decision
	d.mu.Lock()
	s := d.mu.c.start(txn, w)
	for {
		v, ok := d.mu.c.next(&s)
		if !ok {
			break
		}
		if d.failLocked(&s, v, &dec) && w != nil && v.victim.waiter == w {
			dec.err = v.err
		}
	}
	d.mu.Unlock()
	dec.deferred = dec.deferred || s.deferred
	d.apply(dec)
	return dec.err
}

// failLocked carries out v, a verdict of search s (nil for a background
// pass): it fails the victim's wait, if it is still reported and active,
// tells the core, and adds the deadlock to dec's reports. It reports
// whether the victim was failed.
func (d *Detector) failLocked(s *search, v verdict, dec *decision) bool {
	if !v.assumed && d.testingOnConfirm != nil {
		d.testingOnConfirm(v.err)
	}
	delivered := d.reg.fail(v.victim.txn, v.victim.waiter, v.victim.seq, v.err)
	d.mu.c.settle(s, v, delivered)
	if !delivered {
		return false
	}
	if !v.assumed && d.testingOnBreak != nil {
		d.testingOnBreak(v.err)
	}
	dec.reports = append(dec.reports, v.err)
	return true
}

// apply carries out the rest of a decision with mu released.
func (d *Detector) apply(dec decision) {
	if dec.deferred {
		d.passWish.Store(true)
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
	s.BackgroundPasses = d.passes.Load()
	s.Waits = d.reg.count()
	return s
}

// History returns copies of the most recent deadlocks (Options.HistorySize
// of them), oldest first, newest last. The newest is marked Latest: its
// Report is titled LATEST DETECTED DEADLOCK, the others' by their Seq. A deadlock is recorded when it is
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
		return &txnlock.LockError{Op: "close detector", Err: txnlock.ErrClosed}
	}
	d.closeOnce.Do(func() { close(d.stop) })
	<-d.done
	return nil
}

// run is the background goroutine. When woken it runs a full pass if one
// is wanted (a deferred or unconfirmed search, or a new wait with
// Background detection); every BackgroundInterval it runs a full pass
// anyway. After a full pass no other starts for passRestFactor times as
// long as it worked (at most BackgroundInterval; not counting its wait for
// mu, behind the searches of a busy graph), so that a busy graph, where
// every wait wakes it, spends at most about a tenth of one processor on
// passes; the wishes that arrive meanwhile coalesce.
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
		if d.takePassWish() {
			wantPass = true
		}
		now := clock.Now()
		if !now.Before(next) {
			wantPass = true
			next = now.Add(interval)
		}
		if wantPass && !now.Before(restUntil) {
			busy := d.backgroundPass()
			restUntil = clock.Now().Add(min(passRestFactor*busy, interval))
			wantPass = false
		}
	}
}

// takePassWish reports whether a full pass is wanted, and clears the wish:
// the pass is about to run.
func (d *Detector) takePassWish() bool { return d.passWish.Swap(false) }

// backgroundPass reads every reported wait and its blockers from the
// managers (the registry's flatten, slot by slot, without mu), searches
// that snapshot without limits, and breaks each cycle it finds that live
// state confirms. It takes mu once for all of them: a busy graph's
// on-block searches queue on mu, and a pass that took it once per cycle
// would wait behind the whole queue each time. It returns how long it
// worked, its wait for mu left out.
func (d *Detector) backgroundPass() (busy time.Duration) {
	d.passMu.Lock()
	defer d.passMu.Unlock()
	d.passes.Add(1)
	clock := d.opts.Clock
	start := clock.Now()
	d.passFlat, d.passArena = d.reg.flatten(d.passFlat[:0], d.passArena[:0])
	if len(d.passFlat) == 0 {
		return clock.Now().Sub(start)
	}
	snap := snapshotOf(d.passFlat, d.passArena)
	clear(d.passFlat) // drop the waiter references
	if d.testingAfterSnapshot != nil {
		d.testingAfterSnapshot()
	}

	var dec decision
	busy = clock.Now().Sub(start)
	d.mu.Lock()
	locked := clock.Now()
	steps, more := backgroundPass(snap, &d.passStack, maxCyclesPerPass, func(cycle []*edge) *edge {
		v, drop := d.mu.c.resolve(cycle)
		if v == nil {
			dec.deferred = true
		} else {
			d.failLocked(nil, *v, &dec)
		}
		return drop
	})
	d.mu.c.stats.Steps += uint64(steps)
	d.mu.Unlock()
	busy += clock.Now().Sub(locked)
	d.apply(dec)
	if more {
		d.wake()
	}
	return busy
}
