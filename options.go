package txnlock

import (
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
	// Timeout. NoWait fails at once (ErrLockNoWait), WaitForever never times out.
	// Default: DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// Detector finds deadlocks among waiters. Give several managers the
	// same Detector to find cycles that cross them. Default: nil, no
	// detection (deadlocks end by timeout). A detector that needs every
	// wait to end by a timeout (one across processes) makes WaitForever
	// invalid, here and in a Request.
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
	var problems []string
	if o.LockTimeout < 0 && o.LockTimeout != NoWait {
		problems = append(problems, fmt.Sprintf("LockTimeout %v is negative (use NoWait or WaitForever)", o.LockTimeout))
	}
	if o.LockTimeout == WaitForever && o.Detector != nil && o.Detector.Seam().FiniteWaits() {
		problems = append(problems, fmt.Sprintf("LockTimeout WaitForever: detector %T needs every wait to end by a timeout", o.Detector))
	}
	if problems != nil {
		return &OptionsError{Problems: problems}
	}
	return nil
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

// OptionsError lists every problem Validate found. errors.Is(err,
// ErrInvalidOptions) is true.
type OptionsError struct{ Problems []string }

func (e *OptionsError) Error() string {
	return "txnlock: invalid options: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }
