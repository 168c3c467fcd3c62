package txnlock

import (
	"context"
	"math"
	"time"
)

// Special values of Request.Timeout and WaitOptions.LockTimeout.
const (
	// DefaultTimeout (the zero value) in a Request uses the manager's
	// LockTimeout.
	DefaultTimeout time.Duration = 0
	// NoWait fails at once with ErrLockNoWait if the request would wait.
	NoWait time.Duration = -1
	// WaitForever waits until the lock is granted, the context ends, or a
	// deadlock victimizes the request.
	WaitForever time.Duration = math.MaxInt64
)

// Request asks for a lock on Range in column family CF for transaction Txn.
type Request struct {
	Txn   TxnID
	CF    ColumnFamily
	Range Range // [k, k] from Point(k) for a key lock
	Mode  Mode
	// Timeout bounds the wait: DefaultTimeout (0) uses the manager's
	// LockTimeout, NoWait fails at once (ErrLockNoWait) if the request
	// would wait, WaitForever never times out, any
	// other positive duration waits that long. Other negative values are
	// ErrInvalidTimeout. The context's deadline applies as well.
	Timeout time.Duration
}

// Manager is a lock manager: pointlock.Manager locks keys, rangelock.Manager
// locks ranges of keys. Both are safe for concurrent use.
//
// Locks are sets, not counters: locking a key the transaction already holds
// is a no-op (Shared while holding Exclusive keeps Exclusive; Exclusive while
// holding Shared upgrades), and one Unlock releases it however many times it
// was locked.
type Manager interface {
	// Lock acquires req.Range in req.Mode, waiting as req.Timeout and ctx
	// allow. On error the lock state is exactly as before the call. Errors
	// are *LockError wrapping one of:
	//   - ErrLockTimeout: the request waited its lock-wait timeout out;
	//   - ErrLockNoWait: req.Timeout is NoWait and the request would have
	//     waited (it was not queued);
	//   - ErrDeadlock (a *DeadlockError): the request was a deadlock's
	//     victim;
	//   - ErrLockLimit, a context error, or a bad-input sentinel
	//     (ErrInvalidTxn, ErrInvalidMode, ErrInvalidRange,
	//     ErrRangeNotSupported, ErrUnknownColumnFamily, ErrInvalidTimeout,
	//     ErrNilContext, ErrClosed).
	//
	// ErrLockTimeout and ErrLockNoWait both match ErrLockNotGranted, and
	// their LockError names the blocking transactions: test
	// errors.Is(err, ErrLockNotGranted) to treat them alike.
	Lock(ctx context.Context, req Request) error

	// Unlock releases the lock txn holds on exactly r in cf, and wakes the
	// requests that can now be granted. ErrNotHeld if txn holds no such lock.
	Unlock(txn TxnID, cf ColumnFamily, r Range) error

	// UnlockAll releases every lock txn holds in this manager, at a cost
	// proportional to what it holds. Releasing nothing is not an error.
	// Call it when a transaction ends, even after Unlocking everything
	// one by one: a manager may keep a small record of the transaction
	// until then (rangelock keeps which stripes it touched; pointlock
	// drops its record with the last lock).
	UnlockAll(txn TxnID) error

	// AddColumnFamily registers cf. ErrColumnFamilyExists if it exists.
	AddColumnFamily(cf ColumnFamily) error

	// DropColumnFamily forgets cf. ErrColumnFamilyInUse while any lock is
	// held or requested in it, and for DefaultColumnFamily.
	DropColumnFamily(cf ColumnFamily) error

	// Status returns a snapshot of every held lock and every waiter.
	Status() Status

	// Stats returns the manager's counters.
	Stats() Stats

	// Close fails every waiter with ErrClosed and makes every later call
	// fail with ErrClosed. Locks still held are dropped.
	Close() error
}

// LockRef names a lock request for reports: where and in which mode.
type LockRef struct {
	CF    ColumnFamily
	Range Range
	Mode  Mode
}

// String renders "cf 1 [k] X".
func (l LockRef) String() string {
	return l.CF.String() + " " + l.Range.String() + " " + l.Mode.String()
}
