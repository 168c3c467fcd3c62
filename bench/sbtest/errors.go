package sbtest

import (
	"errors"
	"strings"

	"github.com/txnlock/txnlock/pebbletxn"
)

// Errors; test with errors.Is. Lock failures come through from the manager
// unchanged (txnlock.ErrDeadlock, txnlock.ErrLockTimeout, ...).
var (
	// ErrDuplicateKey: an insert of an id that exists.
	ErrDuplicateKey = errors.New("sbtest: duplicate key")
	// ErrUnknownTable: a table number outside 1..Tables.
	ErrUnknownTable = errors.New("sbtest: unknown table")
	// ErrValueTooLong: c longer than 120 bytes or pad longer than 60.
	ErrValueTooLong = errors.New("sbtest: value too long")
	// ErrTxnDone: a statement after Commit or Rollback.
	ErrTxnDone = pebbletxn.ErrTxnDone
	// ErrClosed: a call on a closed DB (errors.Is txnlock.ErrClosed too).
	ErrClosed = pebbletxn.ErrClosed
	// ErrNotEmpty: Prepare of a table that already has rows.
	ErrNotEmpty = errors.New("sbtest: table not empty")
	// ErrInconsistent: Verify found a row without its secondary-key entry,
	// an entry without its row, or an undecodable entry.
	ErrInconsistent = errors.New("sbtest: table inconsistent")
)

// opError reads operation first, then cause, with one prefix: "sbtest:
// insert sbtest1 id 5: duplicate key", "sbtest: verify: closed" (the
// cause's own sbtest or pebbletxn prefix goes). errors.Is sees the cause.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	msg := e.err.Error()
	for _, p := range []string{"sbtest: ", "pebbletxn: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return "sbtest: " + e.op + ": " + msg
}

func (e *opError) Unwrap() error { return e.err }
