// Package optcheck is what every Options.Validate of the module shares:
// Problems collects every problem of a set of options so that Validate
// reports them all at once, as a *txnlock.OptionsError; ResolveTimeout
// turns a request's timeout into the wait to apply.
package optcheck

import (
	"errors"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
)

// Problems collects option problems. The zero Problems is empty.
type Problems struct{ list []string }

// Addf records one problem.
func (p *Problems) Addf(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// Merge records the problems of err (from another Validate), if any.
func (p *Problems) Merge(err error) {
	if err == nil {
		return
	}
	var o *txnlock.OptionsError
	if errors.As(err, &o) {
		p.list = append(p.list, o.Problems...)
		return
	}
	p.list = append(p.list, err.Error())
}

// Err returns nil or a *txnlock.OptionsError listing every problem.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &txnlock.OptionsError{Problems: p.list}
}

// ResolveTimeout turns a Request.Timeout into the wait to apply, using def
// for txnlock.DefaultTimeout. It returns txnlock.ErrInvalidTimeout for
// negative values other than NoWait, and for WaitForever if finite (the
// manager's detector needs every wait to end by a timeout).
func ResolveTimeout(t, def time.Duration, finite bool) (time.Duration, error) {
	switch {
	case t == txnlock.DefaultTimeout:
		return def, nil
	case t == txnlock.WaitForever && finite:
		return 0, txnlock.ErrInvalidTimeout
	case t == txnlock.NoWait || t > 0:
		return t, nil
	}
	return 0, txnlock.ErrInvalidTimeout
}
