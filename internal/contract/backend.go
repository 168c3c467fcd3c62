package contract

import (
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// Backend is what the traces run against: a lock manager, and the means to
// tell which of its waiting requests finished. The harness calls it from
// one goroutine, one command at a time; whether the backend runs
// goroutines of its own is its business (the manager backend runs one per
// waiting Lock call).
type Backend interface {
	// Lock issues request id. It reports done and the outcome if the
	// request finished at once; otherwise the request waits, and a later
	// Settle reports its end. Lock returns only once a waiting request is
	// settled in its queue: its deadline counts from the clock's time at
	// the call, and Status shows it.
	Lock(id int, req txnlock.Request, ctx Ctx) (done bool, err error)
	// Cancel cancels the context of waiting request id.
	Cancel(id int)
	Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error
	UnlockAll(txn txnlock.TxnID) error
	AddColumnFamily(cf txnlock.ColumnFamily) error
	DropColumnFamily(cf txnlock.ColumnFamily) error
	Status() txnlock.Status
	Stats() txnlock.Stats
	Close() error
	// Settle returns the waiting requests that finished since the last
	// call (because of a call, a cancellation or the clock), in any order.
	// It returns once nothing more will finish without another command.
	Settle() []Outcome
	// Stop closes the manager unless a trace did, and ends every request.
	Stop()
}

// Checker is a Manager or Backend that checks its own invariants. The
// harness calls CheckInvariants after every command, once the requests the
// command ended have finished, and fails the trace on an error.
type Checker interface {
	CheckInvariants() error
}

// Outcome is how waiting request ID ended: granted (nil) or Err.
type Outcome struct {
	ID  int
	Err error
}

// Ctx is the context a lock command passes.
type Ctx uint8

const (
	// CtxLive is a context that a cancel command may cancel later.
	CtxLive Ctx = iota
	// CtxCancelled is a context cancelled before the call.
	CtxCancelled
	// CtxNil is a nil context.
	CtxNil
)

// Options are what a trace's "new" asks of the manager. A manager that
// does not have an option set here must refuse it.
type Options struct {
	// LockTimeout is the manager's default wait; 0: the manager's default
	// (txnlock.DefaultLockTimeout).
	LockTimeout time.Duration
	// Stripes is the manager's stripe count: 4 unless the trace says.
	Stripes int
	// MaxLocks is pointlock's MaxLocks; 0: unlimited.
	MaxLocks int
	// MaxLockMemory is rangelock's MaxLockMemory; 0: the default.
	MaxLockMemory int64
	// EscalationBarriers are keys at which rangelock's escalation must
	// not merge: nothing before a barrier merges with it or anything
	// after it (as if a new index started there). nil: no barrier.
	EscalationBarriers [][]byte
	// CollideHashes makes pointlock keys share hashes, a quarter of all
	// keys per hash, to test its hash-collision chains.
	CollideHashes bool
}

// Config is what a manager constructor gets: the trace's options, and the
// clock, detector and hook the manager must use so that the backend can
// follow its waits.
type Config struct {
	Options
	// Clock is the manual clock, as the manager must see it.
	Clock txnlock.Clock
	// Detector is the deadlock detector the manager must use; nil: none.
	Detector txnlock.Detector
	// Queued must be called by a request that has joined a queue, with no
	// manager lock held, before it waits (the managers' unexported
	// queued hook).
	Queued func(txnlock.TxnID)
}

// deadline returns when req's timeout fires, counting from now, and false
// if it never fires (WaitForever), or the request never waits on a timer
// (NoWait, invalid).
func deadline(now time.Time, req txnlock.Request, def time.Duration) (time.Time, bool) {
	if def == 0 {
		def = txnlock.DefaultLockTimeout
	}
	d, err := optcheck.ResolveTimeout(req.Timeout, def, false)
	if err != nil || d == txnlock.NoWait || d == txnlock.WaitForever {
		return time.Time{}, false
	}
	return now.Add(d), true
}
