package pebbletxn

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// StorageError says which call Pebble failed and why: an I/O error, a
// corrupt file, a Pebble DB closed under the DB, or a fatal Pebble error
// (see FatalError). errors.Is(err, ErrStorage) holds, and so does
// errors.Is or errors.As against Pebble's own cause (pebble.ErrClosed,
// pebble.ErrCorruption, an injected filesystem error, ...).
//
// A transaction whose call fails with a StorageError is still open (a
// Commit ends it): its batch is as before the call, its locks are held
// until Rollback.
type StorageError struct {
	Op  string        // "begin", "get", "scan", "commit", ...
	Txn txnlock.TxnID // 0 for a call outside a transaction
	Err error         // Pebble's error
}

func (e *StorageError) Error() string {
	if e.Txn.Valid() {
		return fmt.Sprintf("pebbletxn: %s %v: storage failure: %s", e.Op, e.Txn, cause(e.Err))
	}
	return fmt.Sprintf("pebbletxn: %s: storage failure: %s", e.Op, cause(e.Err))
}

// Unwrap returns ErrStorage and Pebble's error.
func (e *StorageError) Unwrap() []error { return []error{ErrStorage, e.Err} }

// FatalError is a fatal Pebble error caught in the goroutine of a
// pebbletxn call: Pebble logs it with Logger.Fatalf, which stops the
// process with Pebble's default logger. The DB of Open installs a logger
// that raises it as a panic instead, and each call recovers it into a
// *StorageError wrapping the FatalError. Pebble's state is undefined
// after it (a failed WAL write leaves its commit pipeline stuck): the DB
// fails every later call with the same error; close it and reopen the
// store in a fresh process. A Fatalf raised in one of Pebble's background
// goroutines (a flush, a compaction, a MANIFEST write it makes on its
// own) cannot be recovered there and still stops the process, and so does
// a WAL that fails while Pebble rotates it to a new memtable (Pebble
// panics there with its mutex released, which the Go runtime turns into
// a fatal error).
type FatalError struct {
	Msg string // Pebble's message
}

func (e *FatalError) Error() string { return "pebble fatal error: " + e.Msg }

// fatalLogger is the Pebble logger of Open: Infof and Errorf go to the
// caller's logger, Fatalf panics with a *FatalError.
type fatalLogger struct {
	pebble.Logger // nil: drop Infof and Errorf
}

func (l fatalLogger) Infof(format string, args ...any) {
	if l.Logger != nil {
		l.Logger.Infof(format, args...)
	}
}

func (l fatalLogger) Errorf(format string, args ...any) {
	if l.Logger != nil {
		l.Logger.Errorf(format, args...)
	}
}

func (l fatalLogger) Fatalf(format string, args ...any) {
	panic(&FatalError{Msg: fmt.Sprintf(format, args...)})
}

// fatalState remembers the first fatal Pebble error a DB saw.
type fatalState struct {
	err atomic.Pointer[FatalError]
}

// failed returns a *StorageError for op of txn wrapping the DB's fatal
// error, or nil if there was none.
func (f *fatalState) failed(op string, txn txnlock.TxnID) error {
	if fe := f.err.Load(); fe != nil {
		return &StorageError{Op: op, Txn: txn, Err: fe}
	}
	return nil
}

// recoverPebble turns the panics Pebble raises for a closed DB or snapshot
// (pebble.ErrClosed) and the logger's *FatalError into a *StorageError in
// *err; any other panic goes on. Call it deferred.
func (db *DB) recoverPebble(op string, txn txnlock.TxnID, err *error) {
	r := recover()
	if r == nil {
		return
	}
	cause, ok := r.(error)
	var fe *FatalError
	switch {
	case ok && errors.As(cause, &fe):
		db.fatal.err.CompareAndSwap(nil, fe)
		*err = &StorageError{Op: op, Txn: txn, Err: fe}
	case ok && errors.Is(cause, pebble.ErrClosed):
		*err = &StorageError{Op: op, Txn: txn, Err: cause}
	default:
		panic(r)
	}
}

// storageErr wraps a Pebble error returned by op.
func storageErr(op string, txn txnlock.TxnID, err error) error {
	if err == nil {
		return nil
	}
	return &StorageError{Op: op, Txn: txn, Err: err}
}
