package txnlock

import "time"

// Detector is the two-way seam between lock managers and a deadlock
// detector (package deadlock implements it). Managers that are given the
// same Detector in their options share one waits-for graph, so a cycle that
// crosses column families or runs through a point lock and a range lock is
// found.
//
// The graph has two kinds of node: transactions and resources. A waiting
// transaction points at the resource it waits for; a resource points at the
// transactions that block it (its holders, and for a range manager the
// incompatible requests queued ahead). A queue of N waiters on one lock is N
// edges into one resource, so a search from a new waiter never walks the
// queue: resource → holders is all it needs, because queued waiters wait
// for nothing else.
//
// Managers call NewResource, SetBlockers, DropResource and Stamp with
// their own locks held: these must be quick and must not call back into a
// manager.
// The waiter's own goroutine calls Block, Check and Unblock, with no
// manager lock held (internal/lockwait does it for both managers): a hot
// lock's critical sections never wait for the detector's graph. So Block
// may come after the wait has already ended (a fast grant) and Unblock
// after the manager has moved on; a detector ignores a wait whose Waiter
// is no longer active (Waiter.Active). The detector fails a
// waiter through Waiter.Fail, which only flags and signals.
//
// A transaction never blocks itself: when a search follows a resource's
// blockers it skips the transaction whose wait led to that resource (an
// upgrading holder is listed among the holders of the lock it waits for).
type Detector interface {
	// NewResource returns an id, unique within the detector, for a lock
	// that is about to get its first waiter.
	NewResource() ResourceID
	// Block records a wait edge: e.Txn waits for e.Resource (whose
	// blockers the manager has set). It reports whether the wait needs a
	// Check. False means no cycle can run through the wait now (none of
	// the resource's blockers is itself waiting, or the wait is over), and
	// a cycle that forms later needs a later edge (another Block, or a
	// SetBlockers that makes a waiting transaction a blocker), whose
	// search will find it: the waiter may sleep without calling Check. A
	// hot lock with a queue behind running holders costs one Block and
	// one Unblock per wait, and no search. (package deadlock keeps the
	// wait of a transaction that blocks nothing out of its graph
	// altogether, until SetBlockers makes it a blocker.)
	Block(e WaitEdge) (needsCheck bool)
	// Unblock removes the wait edge of w (granted, failed or given up);
	// a no-op if there is none.
	Unblock(w Waiter)
	// SetBlockers replaces the transactions that block resource r. The
	// detector copies the slice.
	SetBlockers(r ResourceID, blockers []TxnID)
	// DropResource forgets r once its last waiter has left.
	DropResource(r ResourceID)
	// Check runs deadlock detection for waiter w before it sleeps, if
	// Block said it needs one. It
	// returns a *DeadlockError if w must give up (it is the victim, or the
	// search hit a limit under the assume-deadlock policy), else nil. Other
	// victims are failed through their Waiter.
	Check(w Waiter) error
	// Stamp returns the next value of one counter of the detector's. A
	// manager takes a stamp for each wait inside the critical section that
	// queues it and passes it in WaitEdge.Stamp: stamps then order waits
	// as they were queued, whatever order their reports (Block) arrive in,
	// so the detector knows which wait closed a cycle even when an earlier
	// waiter's goroutine reports late.
	Stamp() uint64
	// DetectDelay is how long a wait lasts before its waiter reports it
	// (Block) and, if Block asks, calls Check: a wait that ends sooner
	// costs the detector nothing. 0: at once. Negative: Block at once,
	// and the waiter never calls Check.
	DetectDelay() time.Duration
}

// ResourceID names a resource in a Detector's graph. Zero means none.
type ResourceID uint64

// Waiter is the handle of one blocked request, as a detector sees it.
type Waiter interface {
	// Fail ends the wait with err unless it already ended (granted, timed
	// out, cancelled). It reports whether err was delivered. It never
	// blocks, never takes a manager lock and never calls the Detector: a
	// detector may call it with its own mutex held, while the wait is
	// still in its graph (so the waiter cannot have been recycled).
	Fail(err error) bool
	// Txn is the waiting transaction.
	Txn() TxnID
	// Active reports whether the wait may still be going on: false once
	// it was granted or failed. A manager grants a waiter, which wakes
	// and Unblocks its wait a moment later; in between the detector still
	// has the wait, and must not report a transaction that is running
	// again as deadlocked. It is called at any time, also after the wait
	// ended and the waiter was recycled, so it must be a plain read (an
	// atomic load) that takes no lock.
	Active() bool
}

// WaitEdge describes a wait to the detector.
type WaitEdge struct {
	Waiter   Waiter
	Resource ResourceID
	Lock     LockRef // what is requested, for reports
	// LocksHeld is how many locks the waiter holds in its manager, for the
	// fewest-locks victim policy and the reports.
	LocksHeld int
	Since     time.Time
	// Stamp orders the wait among the detector's waits (Detector.Stamp),
	// taken when the wait was queued; 0 if the manager took none.
	Stamp uint64
}
