package txnlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every error a manager returns wraps one of these (or a
// context error); test with errors.Is.
var (
	// ErrLockNotGranted: the lock was held in a conflicting mode and the
	// request ended without it, because its lock-wait timeout fired
	// (ErrLockTimeout) or because it was not to wait at all
	// (ErrLockNoWait). Both satisfy errors.Is(err, ErrLockNotGranted), so
	// that a caller that retries or rolls back on either tests once.
	ErrLockNotGranted = errors.New("txnlock: lock not granted")
	// ErrLockTimeout: the request waited for its lock-wait timeout and was
	// not granted (MySQL's ER_LOCK_WAIT_TIMEOUT, 1205). errors.Is(err,
	// ErrLockNotGranted) is true as well.
	ErrLockTimeout error = &notGrantedError{"txnlock: lock wait timeout"}
	// ErrLockNoWait: a NoWait request found the lock held in a conflicting
	// mode (or queued for) and failed at once, without waiting (MySQL's
	// ER_LOCK_NOWAIT, 3572). errors.Is(err, ErrLockNotGranted) is true;
	// errors.Is(err, ErrLockTimeout) is false.
	ErrLockNoWait error = &notGrantedError{"txnlock: lock not free and NoWait set"}
	// ErrDeadlock: the request was chosen as the victim of a deadlock, or
	// the search hit its limit under the assume-deadlock breaker policy. The
	// error is a *DeadlockError.
	ErrDeadlock = errors.New("txnlock: deadlock")
	// ErrLockLimit: granting the request would exceed the manager's lock
	// limit (MaxLocks, MaxLockMemory). Returned at once, without waiting.
	ErrLockLimit = errors.New("txnlock: lock limit reached")
	// ErrInvalidRange: the range covers no key, its start is after its end,
	// or it was never built (the zero Range).
	ErrInvalidRange = errors.New("txnlock: invalid range")
	// ErrRangeNotSupported: the manager locks single keys only (pointlock)
	// and the request named a range of more than one key.
	ErrRangeNotSupported = errors.New("txnlock: range locks not supported by this manager")
	// ErrClosed: the manager (or detector) was closed.
	ErrClosed = errors.New("txnlock: closed")
	// ErrInvalidTxn: the zero TxnID.
	ErrInvalidTxn = errors.New("txnlock: invalid transaction id")
	// ErrInvalidMode: a Mode other than Shared or Exclusive.
	ErrInvalidMode = errors.New("txnlock: invalid lock mode")
	// ErrInvalidTimeout: a negative Request.Timeout other than NoWait.
	ErrInvalidTimeout = errors.New("txnlock: invalid lock timeout")
	// ErrNilContext: a nil context.Context.
	ErrNilContext = errors.New("txnlock: nil context")
	// ErrNilManager: a Txn call given a nil Manager.
	ErrNilManager = errors.New("txnlock: nil manager")
	// ErrUnknownColumnFamily: the column family is negative or not registered.
	ErrUnknownColumnFamily = errors.New("txnlock: unknown column family")
	// ErrColumnFamilyExists: AddColumnFamily of a registered column family.
	ErrColumnFamilyExists = errors.New("txnlock: column family already exists")
	// ErrColumnFamilyInUse: DropColumnFamily while locks are held or
	// requested in it, or of the default column family.
	ErrColumnFamilyInUse = errors.New("txnlock: column family in use")
	// ErrNotHeld: Unlock of a lock the transaction does not hold.
	ErrNotHeld = errors.New("txnlock: lock not held")
	// ErrInvalidOptions: an Options.Validate failure; the error lists every
	// problem.
	ErrInvalidOptions = errors.New("txnlock: invalid options")
	// ErrTxnReleased: a call on a Txn handle after its Release, or a Lock
	// of the handle that was still waiting when Release was called.
	ErrTxnReleased = errors.New("txnlock: transaction released")
	// ErrInvalidSavepoint: Txn.RollbackTo of a savepoint taken before the
	// handle's last RollbackTo, of another handle's savepoint, or of the
	// zero Savepoint.
	ErrInvalidSavepoint = errors.New("txnlock: invalid savepoint")
)

// notGrantedError is the type of ErrLockTimeout and ErrLockNoWait: each is
// its own sentinel and also matches ErrLockNotGranted.
type notGrantedError struct{ msg string }

func (e *notGrantedError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrLockNotGranted) true.
func (e *notGrantedError) Is(target error) bool { return target == ErrLockNotGranted }

func invalidRange(why string) error { return fmt.Errorf("%w: %s", ErrInvalidRange, why) }

// LockError says which request failed and why. Err is a sentinel above, a
// *DeadlockError, or a context error; errors.Is and errors.As see through it.
type LockError struct {
	Op       string // "lock", "unlock", ...
	Txn      TxnID
	CF       ColumnFamily
	Range    Range
	Mode     Mode
	Blockers []TxnID // for ErrLockNotGranted: whom it waited (or would have waited) for at the end, as WaitStatus.Blockers
	Err      error
}

// Error reads operation first, then cause: "txnlock: lock txn 3 cf 1 [k]
// X: lock wait timeout (blocked by [7])".
func (e *LockError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "txnlock: %s", e.Op)
	// Name only what the call was about: a transaction and a range when the
	// call had them (or when they are what was wrong).
	if e.Txn.Valid() || errors.Is(e.Err, ErrInvalidTxn) {
		fmt.Fprintf(&sb, " %s", e.Txn)
	}
	showRange := e.Range.Valid() || errors.Is(e.Err, ErrInvalidRange)
	if showRange || e.CF != DefaultColumnFamily || errors.Is(e.Err, ErrUnknownColumnFamily) ||
		errors.Is(e.Err, ErrColumnFamilyExists) || errors.Is(e.Err, ErrColumnFamilyInUse) {
		fmt.Fprintf(&sb, " %s", e.CF)
	}
	if showRange {
		fmt.Fprintf(&sb, " %v", e.Range)
	}
	if e.Mode.Valid() {
		fmt.Fprintf(&sb, " %v", e.Mode)
	}
	fmt.Fprintf(&sb, ": %s", cause(e.Err))
	if len(e.Blockers) > 0 {
		fmt.Fprintf(&sb, " (blocked by %s)", txnList(e.Blockers))
	}
	return sb.String()
}

// cause is err's message for a wrapping error's text: without the
// "txnlock: " prefix, so that a message has one prefix, its outermost.
func cause(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "txnlock: ")
}

// Unwrap returns the cause.
func (e *LockError) Unwrap() error { return e.Err }

// CycleEntry is one transaction of a deadlock cycle: the lock it waits
// for, and whom it waits for directly, by the rule of WaitStatus.Blockers.
type CycleEntry struct {
	Txn  TxnID
	Lock LockRef
	// Blockers are the transactions the wait waits for directly when the
	// deadlock was found: the holders of the lock it conflicts with, or
	// the conflicting requests queued ahead of it that it waits for. The
	// next entry's transaction is among them.
	Blockers  []TxnID
	LocksHeld int // locks held in every manager sharing the detector, when the deadlock was found
	Since     time.Time
}

// DeadlockError reports a deadlock. It is the error returned to the victim
// and the record kept in the detector's history. errors.Is(err, ErrDeadlock)
// is true.
type DeadlockError struct {
	Victim TxnID
	// Cycle lists the transactions in wait order, from the victim:
	// Cycle[i] waits for Cycle[i+1] (the last for Cycle[0]), which holds
	// a lock Cycle[i]'s request conflicts with, or has a request queued
	// ahead of it that it waits for. A queue on the way is expanded: a
	// request that stands between two transactions is a member of the
	// cycle. Empty when LimitExceeded.
	Cycle []CycleEntry
	// LimitExceeded: no cycle was found; the search hit the detector's
	// depth, step or time limit and the breaker policy assumes a deadlock.
	// Path is then the part walked before the limit.
	LimitExceeded bool
	Path          []CycleEntry
	Limit         string // which limit tripped: "depth", "steps", "time"
	Time          time.Time
	// Seq numbers the deadlocks a detector found, from 1, in the order it
	// found them (assumed ones too); 0 if no detector made the error.
	Seq uint64
	// Latest is set on the newest entry of a detector's History: Report
	// then titles it LATEST DETECTED DEADLOCK, as InnoDB titles the one
	// deadlock it keeps.
	Latest bool
}

func (e *DeadlockError) Error() string {
	if e.LimitExceeded {
		return fmt.Sprintf("txnlock: deadlock assumed: search %s limit exceeded (victim %s)", e.Limit, e.Victim)
	}
	ids := make([]string, len(e.Cycle))
	for i, c := range e.Cycle {
		ids[i] = fmt.Sprint(uint64(c.Txn))
	}
	return fmt.Sprintf("txnlock: deadlock: cycle %s (victim %s)", strings.Join(ids, " -> "), e.Victim)
}

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// Report renders the deadlock like InnoDB's LATEST DETECTED DEADLOCK section:
// a title, the time it was found, then one block per transaction with the
// lock it waits for and who holds it. The title is LATEST DETECTED DEADLOCK
// for the newest entry of a detector's History (Latest), and DEADLOCK
// followed by Seq for any other, so that reports of several deadlocks tell
// which came when.
func (e *DeadlockError) Report() string {
	var sb strings.Builder
	title := "DEADLOCK"
	switch {
	case e.Latest:
		title = "LATEST DETECTED DEADLOCK"
	case e.Seq > 0:
		title = fmt.Sprintf("DEADLOCK %d", e.Seq)
	}
	rule := strings.Repeat("-", max(len(title), 24))
	fmt.Fprintf(&sb, "%s\n%s\n%s\n", rule, title, rule)
	switch {
	case !e.Time.IsZero() && e.Latest && e.Seq > 0:
		fmt.Fprintf(&sb, "%s, deadlock %d\n", e.Time.UTC().Format("2006-01-02 15:04:05.000000"), e.Seq)
	case !e.Time.IsZero():
		sb.WriteString(e.Time.UTC().Format("2006-01-02 15:04:05.000000") + "\n")
	case e.Latest && e.Seq > 0:
		fmt.Fprintf(&sb, "deadlock %d\n", e.Seq)
	}
	entries := e.Cycle
	if e.LimitExceeded {
		fmt.Fprintf(&sb, "SEARCH %s LIMIT EXCEEDED: DEADLOCK ASSUMED; PATH WALKED:\n", strings.ToUpper(e.Limit))
		entries = e.Path
	}
	for i, c := range entries {
		fmt.Fprintf(&sb, "*** (%d) TRANSACTION %d, holding %d lock(s)\n", i+1, uint64(c.Txn), c.LocksHeld)
		fmt.Fprintf(&sb, "*** (%d) WAITING FOR %s %v mode %v, blocked by %s\n", i+1, c.Lock.CF, c.Lock.Range, c.Lock.Mode, txnList(c.Blockers))
	}
	fmt.Fprintf(&sb, "*** WE ROLL BACK TRANSACTION %d\n", uint64(e.Victim))
	return sb.String()
}

// String is Report.
func (e *DeadlockError) String() string { return e.Report() }
