package rangelock

import (
	"fmt"
	"math/bits"
	"runtime"

	"github.com/txnlock/txnlock"
)

// DefaultMaxLockMemory is Options.MaxLockMemory's default: RocksDB's range
// lock manager allows 64 MiB of lock memory too.
const DefaultMaxLockMemory = 64 << 20

// MaxStripes bounds Options.Stripes: a wide request takes every stripe
// mutex of its column family.
const MaxStripes = 1024

// Options configure a Manager. The zero Options are valid and mean the
// defaults: EnsureDefaults fills every zero field.
type Options struct {
	txnlock.WaitOptions

	// Stripes is the number of stripes per column family, a power of two
	// of at most MaxStripes. A point lock lives in one stripe, a wide
	// range in all of them: more stripes let more point requests run in
	// parallel and make wide requests dearer. Default: DefaultStripes(), as pointlock's: 16 ×
	// GOMAXPROCS rounded up to a power of two, at least 16, but at most
	// 256 (a wide request takes every stripe mutex).
	Stripes int
	// MaxLockMemory bounds the bytes of lock memory the manager accounts
	// (over every column family). Beyond it a request escalates its column
	// family and, if still over, fails with ErrLockLimit. Default:
	// DefaultMaxLockMemory (64 MiB).
	MaxLockMemory int64
	// EscalationBarrier, if set, says whether escalation must not merge
	// two adjacent Exclusive ranges left < right of one transaction in cf
	// (for example because they belong to different indexes). It is
	// called with every stripe of cf locked and must not call the
	// Manager. Default: nil, no barrier.
	EscalationBarrier func(cf txnlock.ColumnFamily, left, right txnlock.Range) bool

	// fixedHash makes the stripe of a key the same in every run (tests
	// whose memory figures depend on it); otherwise the hash is seeded at
	// random per Manager.
	fixedHash bool
}

// DefaultStripes is Options.Stripes' default for the current GOMAXPROCS:
// with 16 stripes per processor two running point requests rarely meet on
// one mutex (pointlock's reasoning); the cap keeps a wide request, which
// takes them all, to a few microseconds.
func DefaultStripes() int {
	n := 16 * runtime.GOMAXPROCS(0)
	n = 1 << bits.Len(uint(n-1))
	return min(max(n, 16), 256)
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.WaitOptions.EnsureDefaults()
	if o.Stripes == 0 {
		o.Stripes = DefaultStripes()
	}
	if o.MaxLockMemory == 0 {
		o.MaxLockMemory = DefaultMaxLockMemory
	}
}

// Validate reports every problem of o at once. A zero field is no
// problem: it means its default (EnsureDefaults).
func (o *Options) Validate() error {
	var p txnlock.Problems
	p.Merge(o.WaitOptions.Validate())
	switch {
	case o.Stripes < 0:
		p.Addf("Stripes %d is negative (0 means the default)", o.Stripes)
	case o.Stripes > MaxStripes:
		p.Addf("Stripes %d is above %d", o.Stripes, MaxStripes)
	case o.Stripes&(o.Stripes-1) != 0:
		p.Addf("Stripes %d is not a power of two", o.Stripes)
	}
	if o.MaxLockMemory < 0 {
		p.Addf("MaxLockMemory %d is negative (0 means the default)", o.MaxLockMemory)
	}
	return p.Err()
}

// String renders the options on one line.
func (o Options) String() string {
	det := "none"
	if o.Detector != nil {
		det = fmt.Sprintf("%T", o.Detector)
	}
	clock := "nil"
	if o.Clock != nil {
		clock = fmt.Sprintf("%T", o.Clock)
	}
	timeout := o.LockTimeout.String()
	switch o.LockTimeout {
	case txnlock.NoWait:
		timeout = "no-wait"
	case txnlock.WaitForever:
		timeout = "forever"
	}
	return fmt.Sprintf("lock_timeout=%s detector=%s clock=%s stripes=%d max_lock_memory=%d escalation_barrier=%t",
		timeout, det, clock, o.Stripes, o.MaxLockMemory, o.EscalationBarrier != nil)
}
