package txnlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultLockTimeout is WaitOptions.LockTimeout's default. RocksDB's 1 s
// default makes busy servers fail transactions that would have succeeded a
// moment later; InnoDB waits 50 s. Five seconds, with deadlocks found by
// the detector rather than by timeouts, ends real stalls without spurious
// failures.
const DefaultLockTimeout = 5 * time.Second

// WaitOptions are the waiting settings every manager shares; each manager's
// Options embeds them.
type WaitOptions struct {
	// LockTimeout is how long a request waits when it does not set its own
	// Timeout. NoWait fails at once, WaitForever never times out.
	// Default: DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// Detector finds deadlocks among waiters. Give several managers the
	// same Detector to find cycles that cross them. Default: nil, no
	// detection (deadlocks end by timeout).
	Detector Detector
	// Clock times waits. Default: SystemClock.
	Clock Clock
}

// EnsureDefaults fills zero fields with their defaults.
func (o *WaitOptions) EnsureDefaults() {
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
}

// Validate reports every problem at once. Zero fields are valid: they
// mean the defaults that EnsureDefaults fills in.
func (o *WaitOptions) Validate() error {
	var v Problems
	if o.LockTimeout < 0 && o.LockTimeout != NoWait {
		v.Addf("LockTimeout %v is negative (use NoWait or WaitForever)", o.LockTimeout)
	}
	return v.Err()
}

// String renders the options as space-separated key=value pairs, the
// form every Options.String of the module uses.
func (o WaitOptions) String() string {
	timeout := o.LockTimeout.String()
	switch o.LockTimeout {
	case 0:
		timeout = "default"
	case NoWait:
		timeout = "no-wait"
	case WaitForever:
		timeout = "forever"
	}
	det := "none"
	if o.Detector != nil {
		det = fmt.Sprintf("%T", o.Detector)
	}
	clock := "system"
	if _, ok := o.Clock.(SystemClock); o.Clock != nil && !ok {
		clock = fmt.Sprintf("%T", o.Clock)
	}
	return fmt.Sprintf("lock_timeout=%s detector=%s clock=%s", timeout, det, clock)
}

// Problems collects option problems so that Validate can report all of them
// at once.
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
	var o *OptionsError
	if errors.As(err, &o) {
		p.list = append(p.list, o.Problems...)
		return
	}
	p.list = append(p.list, err.Error())
}

// Err returns nil or an *OptionsError listing every problem.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &OptionsError{Problems: p.list}
}

// OptionsError lists every problem Validate found. errors.Is(err,
// ErrInvalidOptions) is true.
type OptionsError struct{ Problems []string }

func (e *OptionsError) Error() string {
	return "txnlock: invalid options: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// ResolveTimeout turns a Request.Timeout into the wait to apply, using def
// for DefaultTimeout. It returns ErrInvalidTimeout for negative values other
// than NoWait.
func ResolveTimeout(t, def time.Duration) (time.Duration, error) {
	switch {
	case t == DefaultTimeout:
		return def, nil
	case t == NoWait || t > 0:
		return t, nil
	}
	return 0, ErrInvalidTimeout
}
