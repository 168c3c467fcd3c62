package pebbletxn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/txnlock/txnlock"
)

// Errors of pebbletxn itself; test with errors.Is. Lock failures come
// through as the lock manager returned them (a *txnlock.LockError wrapping
// txnlock.ErrLockTimeout, txnlock.ErrDeadlock, ...), so errors.Is and
// errors.As against the root package work unchanged.
var (
	// ErrTxnDone: a call on a transaction after its Commit or Rollback.
	ErrTxnDone = errors.New("pebbletxn: transaction already committed or rolled back")
	// ErrClosed: a call on a closed DB, or on a transaction of one; a
	// second Close of a DB, a Snapshot or a WriteBatch. errors.Is(err,
	// txnlock.ErrClosed) is true as well.
	ErrClosed error = closedError{}
	// ErrColumnFamilyName: an empty column family name, or one longer than
	// MaxColumnFamilyName bytes.
	ErrColumnFamilyName = errors.New("pebbletxn: invalid column family name")
	// ErrTooManyColumnFamilies: every column family id is in use.
	ErrTooManyColumnFamilies = errors.New("pebbletxn: too many column families")
	// ErrStorage: Pebble failed the call (an I/O error, corruption, a
	// closed Pebble DB, a fatal Pebble error). The error is a
	// *StorageError, which keeps Pebble's error reachable.
	ErrStorage = errors.New("pebbletxn: storage failure")
)

// closedError is ErrClosed: one prefix in its text, and txnlock.ErrClosed
// for errors.Is.
type closedError struct{}

func (closedError) Error() string        { return "pebbletxn: closed" }
func (closedError) Is(target error) bool { return target == txnlock.ErrClosed }

// txnError names the operation and transaction that failed and keeps the
// cause reachable for errors.Is and errors.As.
type txnError struct {
	op  string
	txn txnlock.TxnID
	err error
}

// Error reads operation first, then cause, with one prefix:
// "pebbletxn: put txn 7: lock txn 7 cf 0 [k] X: lock wait timeout".
func (e *txnError) Error() string {
	if !e.txn.Valid() {
		return fmt.Sprintf("pebbletxn: %s: %s", e.op, cause(e.err))
	}
	return fmt.Sprintf("pebbletxn: %s %v: %s", e.op, e.txn, cause(e.err))
}

// cause is err's message without a txnlock or pebbletxn prefix, for the
// text of an error that wraps it: a message has one prefix, its outermost.
func cause(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "txnlock: "), "pebbletxn: ")
}
func (e *txnError) Unwrap() error { return e.err }
