package lockwait

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

const (
	stateWaiting int32 = iota
	stateGranted
	stateFailing // a Fail won the race and is writing err
	stateFailed
)

// Waiter is one blocked lock request. Fields other than state, err and ch
// are guarded by the owning manager's lock (the stripe or tree mutex whose
// queue holds the waiter).
type Waiter struct {
	txn txnlock.TxnID
	// Lock is what is requested.
	Lock txnlock.LockRef
	// Upgrade is set when the waiter already holds the lock Shared and
	// wants it Exclusive.
	Upgrade bool
	// MaySkip is set when the request may be ordered ahead of requests
	// queued before it (detect.Edge.MaySkip): an upgrade, or a
	// request of a transaction that held locks when it queued.
	MaySkip bool
	// Since is when the wait began (manager clock).
	Since time.Time
	// Src answers the detector's questions about the wait from the
	// owning manager's live state (Blockers, WaitsFor); nil without a
	// detector.
	Src Source
	// Blocked is Src's Blockers as the manager saw them when it queued
	// the waiter (detect.Edge.Blockers), in a buffer the waiter
	// keeps when it is recycled; valid while Regranted says false.
	Blocked []txnlock.TxnID
	// grants and grantsAt: the count of grants of the waiter's lock,
	// and its value when the waiter was queued (WatchGrants).
	grants   *atomic.Uint32
	grantsAt uint32
	// Stamp is the detector's stamp of the wait (detect.Graph.Stamp),
	// taken where the waiter was queued.
	Stamp uint64
	// Ext is for the owning manager's own bookkeeping.
	Ext any

	state atomic.Int32
	err   error // written before state becomes stateFailed
	ch    chan struct{}

	next, prev *Waiter
	queue      *Queue
}

// pool recycles Waiters handed back by Release, with their channels: a
// wait on a hot key then allocates nothing, which keeps the garbage
// collector, and the stalls it brings to a thousand queued goroutines,
// away.
var pool = sync.Pool{New: func() any { return &Waiter{ch: make(chan struct{}, 1)} }}

// New returns a waiting Waiter for txn.
func New(txn txnlock.TxnID, lock txnlock.LockRef, since time.Time) *Waiter {
	w := pool.Get().(*Waiter)
	w.txn, w.Lock, w.Since = txn, lock, since
	return w
}

// Release hands w back for reuse by a later New. The owner calls it once
// Wait has returned and w is unlinked from its queue, when nothing else
// uses w: a granter does not touch a waiter after Wake, the
// managers fail queued waiters only under the lock that guards the queue,
// and a detector calls w's methods only while its wait is reported, before
// Wait's Unblock returns (a background snapshot may still name w, but
// compares it and calls none of its methods but Active, an atomic read).
// Release is optional (dropping w is correct too); w must not be used
// after it.
func (w *Waiter) Release() {
	if w.queue != nil {
		return
	}
	ch := w.ch
	select {
	case <-ch: // granted or failed, but never waited for
	default:
	}
	// Field by field: a snapshot may read state (atomically) meanwhile.
	w.txn, w.Lock, w.Upgrade, w.MaySkip, w.Since = 0, txnlock.LockRef{}, false, false, time.Time{}
	w.Src, w.Blocked, w.grants, w.grantsAt, w.Stamp, w.Ext, w.err = nil, w.Blocked[:0], nil, 0, 0, nil, nil
	w.state.Store(stateWaiting)
	pool.Put(w)
}

// Txn is the waiting transaction (detect.Waiter).
func (w *Waiter) Txn() txnlock.TxnID { return w.txn }

// Source is what a manager tells a waiter about itself, so that the
// detector can ask (detect.Waiter.Blockers and WaitsFor). Its methods
// take the latch that guards w's queue, and answer false once w no longer
// waits. The detector calls them only while w's wait is reported, so w is
// not recycled meanwhile.
type Source interface {
	Blockers(w *Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool)
	WaitsFor(w *Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool)
}

// Blockers asks the owning manager whom w's lock is blocked by
// (detect.Waiter).
func (w *Waiter) Blockers(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	return w.Src.Blockers(w, dst)
}

// WaitsFor asks the owning manager whom w waits for directly
// (detect.Waiter).
func (w *Waiter) WaitsFor(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	return w.Src.WaitsFor(w, dst)
}

// WatchGrants gives w its lock's count of grants, which the manager
// increments under its latch at every grant, and notes its value now: the
// manager calls it where it queues w and sets Blocked.
func (w *Waiter) WatchGrants(c *atomic.Uint32) { w.grants, w.grantsAt = c, c.Load() }

// Regranted reports whether w's lock may have been granted to anyone
// since w was queued, so that Blocked may be stale (detect.Waiter): true
// unless the manager watches its grants (WatchGrants) and none came.
func (w *Waiter) Regranted() bool { return w.grants == nil || w.grants.Load() != w.grantsAt }

// Requested is what w requests and when its wait began (detect.Waiter).
func (w *Waiter) Requested() (txnlock.LockRef, time.Time) { return w.Lock, w.Since }

// Claim takes the waiter for a grant unless its wait already ended, and
// reports whether it did. The manager calls it under its lock and, if it
// returns true, unlinks the waiter, records it as a holder, and then calls
// Wake, in the same critical section. False means the waiter failed: leave
// it in the queue for its goroutine to remove, and treat it as absent.
//
// A claimed waiter stays asleep until Wake (its own timeout or
// cancellation can no longer fail it), so the grant's bookkeeping — also
// what the waiter's next call reads under another lock, such as a
// per-transaction record — is complete before the waiter returns.
func (w *Waiter) Claim() bool { return w.state.CompareAndSwap(stateWaiting, stateGranted) }

// Wake lets a claimed waiter return from Wait with success. The manager
// must not touch the waiter after Wake: its goroutine may recycle it at
// once (Release).
func (w *Waiter) Wake() { w.ch <- struct{}{} }

// Fail ends the wait with err unless it already ended, and reports whether
// it did (detect.Waiter). It never blocks and takes no lock.
func (w *Waiter) Fail(err error) bool {
	if !w.state.CompareAndSwap(stateWaiting, stateFailing) {
		return false
	}
	w.err = err
	w.state.Store(stateFailed)
	w.ch <- struct{}{}
	return true
}

// Active reports whether the waiter is still waiting (neither granted nor
// failed, nor failing): one atomic load (detect.Waiter). Managers skip
// inactive waiters when scanning a queue.
func (w *Waiter) Active() bool { return w.state.Load() == stateWaiting }

// Err is the failure, or nil if the waiter was granted or still waits.
func (w *Waiter) Err() error {
	if w.state.Load() != stateFailed {
		return nil
	}
	return w.err
}

// Wait sleeps until the waiter is granted or fails, and returns nil or the
// failure. The caller has queued w (and, with a detector, set w.Src and
// w.Stamp, and w.Blocked if it watches the lock's grants) and holds no
// manager lock. timeout is the
// resolved wait (NoWait is handled by the manager before queueing;
// WaitForever never fires).
//
// With a detector, Wait reports the wait (Block) once it has lasted the
// detector's DetectDelay (at once for 0; a wait that ends sooner costs the
// detector nothing), checks it if Block asks for it, and removes it
// (Unblock) before it returns: all outside the manager's critical
// sections.
//
// On a non-nil return the waiter is still linked in its queue: the caller
// must unlink it and re-check the queue behind it.
func (w *Waiter) Wait(ctx context.Context, timeout time.Duration, clock txnlock.Clock, det detect.Graph) error {
	var graceC <-chan time.Time
	reported := false
	if det != nil {
		defer func() {
			if reported {
				det.Unblock(w)
			}
		}()
		switch delay := det.DetectDelay(); {
		case delay > 0:
			g := clock.NewTimer(delay)
			defer g.Stop()
			graceC = g.C()
		default:
			reported = true
			w.report(det, delay == 0)
		}
	}
	if fn := testingParked.Load(); fn != nil {
		(*fn)(w, true)
		defer (*fn)(w, false)
	}
	var timeoutC <-chan time.Time
	if timeout != txnlock.WaitForever {
		t := clock.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C()
	}
	for {
		select {
		case <-w.ch:
			return w.Err()
		case <-ctx.Done():
			w.Fail(ctx.Err())
		case <-timeoutC:
			w.Fail(txnlock.ErrLockTimeout)
			timeoutC = nil
		case <-graceC:
			graceC = nil
			reported = true
			w.report(det, true)
		}
	}
}

// report tells det about the wait and, if check and Block asks for it,
// runs the detector's Check, failing the wait if it must give up.
func (w *Waiter) report(det detect.Graph, check bool) {
	edge := detect.Edge{Waiter: w, Stamp: w.Stamp, MaySkip: w.MaySkip, Blockers: w.Blocked}
	if det.Block(edge) && check {
		if err := det.Check(w); err != nil {
			w.Fail(err)
		}
	}
}

// testingParked, if set, sees every waiter whose goroutine is about to
// sleep in Wait (true), its wait reported unless the detector delays
// reports, and again as Wait returns (false). Tests only: a scheduler that
// runs one step at a time waits for it.
var testingParked atomic.Pointer[func(w *Waiter, sleeps bool)]

// SetTestingParked makes fn see every waiter whose goroutine is about to
// sleep in Wait (sleeps true; with a detector whose DetectDelay is 0, once
// its wait is reported and checked) and as Wait returns (false), until
// the returned func is called. For tests that drive managers one step at
// a time; nil fn is allowed.
func SetTestingParked(fn func(w *Waiter, sleeps bool)) (restore func()) {
	var p *func(*Waiter, bool)
	if fn != nil {
		p = &fn
	}
	old := testingParked.Swap(p)
	return func() { testingParked.Store(old) }
}
