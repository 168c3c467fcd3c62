// Package seam is the interface between this module's lock managers and its
// deadlock detectors: the calls a manager makes for its waits and the
// questions a detector asks about them. txnlock.Detector names it, so that
// only packages of this module can implement a detector; package detect
// gives its types their module-wide names (detect.Graph, detect.Waiter, …),
// and package deadlock's design notes tell how a detector uses it.
//
// The types take the transaction id (T) and the lock reference (R) as
// parameters only so that this package need not import package txnlock,
// which imports it.
//
// The detector asks; the managers do not tell. A waiter's own goroutine
// reports its wait (Graph.Block) and its end (Graph.Unblock), with no
// manager lock held (package lockwait does it for both managers). Between
// the two, the detector may ask the waiter at any moment whom it waits for
// (Waiter.Blockers, Waiter.WaitsFor), and the manager answers from its live
// lock table under its own latch. Grants, releases and queue changes cost
// the detector nothing: a wait costs one Block and one Unblock, and a
// search only when the wait may close a cycle, when a request it was
// answered to wait for left without a grant (Graph.Recheck), or when a
// request was granted at once past queued requests (Graph.Passed) and its
// transaction waits elsewhere.
//
// Lock order: the detector's locks, then a manager's latch. It cannot
// deadlock because a manager never calls the detector with a latch held,
// but for Stamp, which takes no lock (one atomic add). The detector calls
// Waiter.Fail, which takes no lock, with its own locks held.
//
// A transaction never blocks itself: a search that follows a wait's
// Blockers skips the waiting transaction (an upgrading holder is among the
// holders of the lock it waits for).
package seam

import "time"

// Detector is what a manager connects to when it is created with a
// detector in its options.
type Detector[T comparable, R any] interface {
	// Attach connects a manager to the detector. c answers how many locks
	// a transaction holds in the manager: a deadlock report and the
	// fewest-locks victim policy count a transaction's locks in every
	// manager attached. The manager reports its waits to the returned
	// Graph and calls its Detach when it closes.
	Attach(c LockCounter[T]) Graph[T, R]
	// FiniteWaits reports whether the detector needs every wait to end by
	// a timeout (a detector that may not see every cycle, such as one
	// across processes whose links can fail): a manager then refuses
	// waits without one (txnlock.ErrInvalidTimeout) and options that ask
	// for them.
	FiniteWaits() bool
}

// LockCounter is what a detector asks a manager about a transaction.
type LockCounter[T comparable] interface {
	// LocksHeld is how many locks txn holds in the manager now. A
	// detector asks it of the members of a cycle, with none of the
	// manager's locks held; the manager may take its latches.
	LocksHeld(txn T) int
}

// Graph is a manager's attachment to a Detector: the calls the manager
// makes for its waits.
type Graph[T comparable, R any] interface {
	// Block records that e.Waiter waits, and reports whether the wait
	// needs a Check: whether a transaction that blocks the wait's lock
	// now is itself waiting. It takes them from e.Blockers unless the
	// waiter says the lock may have been granted since it was queued
	// (Waiter.Regranted), and else asks (Waiter.Blockers). False means
	// none of them waits (or the wait is over), or nobody can be waiting
	// for the wait's transaction yet (package deadlock's design notes, "A
	// wait nobody waits for"), so no cycle runs through the wait now: a
	// cycle that forms later needs a later event — another wait, or a
	// transaction with a second wait in flight that is granted this
	// one — and the search that event starts finds it. So a queue behind
	// running holders, the common wait, costs one Block and one Unblock
	// and no search.
	Block(e Edge[T, R]) (needsCheck bool)
	// Unblock forgets w's wait (granted, failed or given up), unless the
	// detector never recorded it or has forgotten it already (it may drop
	// an ended wait sooner). When it returns, the detector calls none of
	// w's methods any more, so w may be recycled.
	Unblock(w Waiter[T, R])
	// Check runs deadlock detection for waiter w before it sleeps, if
	// Block said it needs one. It returns a *txnlock.DeadlockError if w
	// must give up (it is the victim, or the search hit a limit under the
	// assume-deadlock policy), else nil. Other victims are failed through
	// their Waiter.
	Check(w Waiter[T, R]) error
	// Recheck searches for a cycle through w's wait, a wait of txn, after
	// a request that w waited for left the queue without a grant (timed
	// out, cancelled, a victim): w now waits for what that request waited
	// for, an edge that no answer of w's showed, and no new wait starts a
	// search. The manager calls it with no latch held, once the request
	// is unlinked; w may have ended, or been recycled, since (then the
	// search finds nothing of it). A victim is failed through its Waiter.
	Recheck(w Waiter[T, R], txn T)
	// Passed tells the detector that a request of txn was granted at
	// once past queued requests that conflict with it (an upgrade, or a
	// request that skips the queue by the managers' waiting rules): those
	// now wait for txn, an edge no new wait reports. If txn waits
	// elsewhere (another of its Lock calls is in flight), a cycle may have
	// closed, and the detector searches from txn's waits. The manager
	// calls it with no latch held, after the grant.
	Passed(txn T)
	// Stamp returns the next value of one counter of the detector's. A
	// manager takes a stamp for each wait inside the critical section that
	// queues it and passes it in Edge.Stamp: stamps then order waits as
	// they were queued, whatever order their reports (Block) arrive in, so
	// the detector knows which wait closed a cycle even when an earlier
	// waiter's goroutine reports late, and whether any request may have
	// been queued behind a wait when it reports (Edge.MaySkip).
	Stamp() uint64
	// DetectDelay is how long a wait lasts before its waiter reports it
	// (Block) and, if Block asks, calls Check: a wait that ends sooner
	// costs the detector nothing. 0: at once. Negative: Block at once,
	// and the waiter never calls Check.
	DetectDelay() time.Duration
	// Detach ends the attachment: the manager calls it once, when it
	// closes, after its waits have ended. The detector then asks the
	// manager nothing more.
	Detach()
}

// Waiter is the handle of one blocked request, as a detector sees it. The
// detector calls Blockers, WaitsFor, LocksHeld and Requested only while the
// wait is reported (after Block, before Unblock returns), from any
// goroutine, with none of the manager's locks held.
type Waiter[T comparable, R any] interface {
	// Fail ends the wait with err unless it already ended (granted, timed
	// out, cancelled). It reports whether err was delivered. It never
	// blocks, never takes a manager lock and never calls the Detector.
	Fail(err error) bool
	// Txn is the waiting transaction.
	Txn() T
	// Active reports whether the wait may still be going on: false once
	// it was granted or failed. It is a plain read (an atomic load) that
	// takes no lock, and may be called at any time, also after the wait
	// ended and the waiter was recycled.
	Active() bool
	// Blockers appends to dst, from the manager's live state, the
	// transactions that block the lock the wait is for: its holders, and
	// anything else that keeps its whole queue waiting (a conflicting
	// range lock over the key, an upgrade queued ahead). It reports false
	// if the wait is over. Requests queued ahead on the same lock are not
	// listed: they wait for nothing but the same blockers, so a search
	// that follows Blockers reaches what they would lead to without
	// walking the queue (package deadlock's design notes: the
	// contraction). A request that also waits for something the queue
	// does not (a range lock queued behind another range waiter) lists
	// that too.
	Blockers(dst []T) ([]T, bool)
	// WaitsFor appends to dst whom the wait waits for directly, by the
	// rule of txnlock.WaitStatus.Blockers (its nearest conflicting
	// requests queued ahead, or else its conflicting holders), as the lock
	// will stand once every request whose wait has ended has left its
	// queue and the queue has been granted again; it appends nothing if
	// the wait would then be granted. It reports false if the wait is
	// over. A detector confirms a cycle by it before it chooses a victim:
	// a waiter queued behind a request that has just failed waits for
	// that request's goroutine only, and is then granted or waits for
	// someone else.
	WaitsFor(dst []T) ([]T, bool)
	// Regranted reports whether the wait's lock may have been granted to
	// anyone since the wait was queued, so that Edge.Blockers may be
	// stale. It must be cheap and take no manager lock; true is always
	// safe.
	Regranted() bool
	// Requested is what the wait requests and when it began: asked of
	// the members of a cycle, for the report. It takes no lock.
	Requested() (R, time.Time)
}

// Edge describes a wait to the detector: seven words, passed in
// registers. What the wait requests and since when, which only a report
// needs, the detector asks of the Waiter (Requested).
type Edge[T comparable, R any] struct {
	Waiter Waiter[T, R]
	// Stamp orders the wait among the detector's waits (Graph.Stamp),
	// taken when the wait was queued; 0 if the manager took none.
	Stamp uint64
	// MaySkip is set if the request may be ordered ahead of requests
	// queued before it (an upgrade, or a request of a transaction that
	// held locks in the manager when it queued), so that they may wait
	// for it although their stamps are older. Unset, only requests
	// queued after it can wait for it.
	MaySkip bool
	// Blockers is what Waiter.Blockers said when the manager queued the
	// wait, if it noted it: Block uses it while Waiter.Regranted says
	// false, and does not keep it.
	Blockers []T
}
