package bench

import (
	"errors"
	"strings"
)

// ErrUnexpected wraps a statement error that is neither a deadlock nor a
// lock-wait timeout; it stops the run, as sysbench stops on an error it
// was not told to ignore.
var ErrUnexpected = errors.New("bench: unexpected statement error")

// opError reads operation first, then cause, with one prefix: "bench:
// open table: pebbletxn: ..." reads "bench: open table: ...". errors.Is and
// errors.As see the cause, and ErrUnexpected when unexpected is set.
type opError struct {
	op         string
	unexpected bool // a statement error that stops the run
	err        error
}

func (e *opError) Error() string {
	var sb strings.Builder
	sb.WriteString("bench: ")
	sb.WriteString(e.op)
	if e.unexpected {
		sb.WriteString(": unexpected statement error")
	}
	sb.WriteString(": ")
	sb.WriteString(cause(e.err))
	return sb.String()
}

func (e *opError) Unwrap() []error {
	if e.unexpected {
		return []error{ErrUnexpected, e.err}
	}
	return []error{e.err}
}

// cause is err's message without the prefix of the package that made it,
// for the text of an error that wraps it: a message has one prefix, its
// outermost.
func cause(err error) string {
	msg := err.Error()
	for _, p := range []string{"bench: ", "sbtest: ", "pebbletxn: ", "txnlock: ", "deadlock: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			return rest
		}
	}
	return msg
}
