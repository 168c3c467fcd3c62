package rangelock

import (
	"fmt"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// DefaultMaxLockMemory is Options.MaxLockMemory's default: RocksDB's range
// lock manager allows 64 MiB of lock memory too.
const DefaultMaxLockMemory = 64 << 20

// MaxStripes bounds Options.Stripes: the first wide request of a striped
// column family takes every stripe latch (see the package doc).
const MaxStripes = locktable.MaxStripes

// Options configure a Manager. The zero Options are valid and mean the
// defaults: EnsureDefaults fills every zero field.
type Options struct {
	txnlock.WaitOptions

	// Stripes is the number of stripes per column family, a power of two
	// of at most MaxStripes. A point lock lives in one stripe: more
	// stripes let more point requests run in parallel while the family
	// has no wide lock or waiter, and make fusing and unfusing it (one
	// latch per stripe) dearer. Default: DefaultStripes().
	Stripes int
	// MaxLockMemory bounds the bytes of lock memory the manager accounts
	// (over every column family). Beyond it a request escalates its column
	// family and, if still over, fails with ErrLockLimit. Default:
	// DefaultMaxLockMemory (64 MiB).
	MaxLockMemory int64
	// EscalationBarrier, if set, says whether escalation must not merge
	// two adjacent Exclusive ranges left < right of one transaction in cf
	// (for example because they belong to different indexes). It is
	// called with every latch of cf held and must not call the Manager. Default: nil, no barrier.
	EscalationBarrier func(cf txnlock.ColumnFamily, left, right txnlock.Range) bool

	// fixedHash makes the stripe of a key the same in every run (tests
	// whose memory figures depend on it); otherwise the hash is seeded at
	// random per Manager.
	fixedHash bool
}

// DefaultStripes is Options.Stripes' default: pointlock's (16 ×
// GOMAXPROCS rounded up to a power of two, at least 16), but at most 256,
// since a range request in a family of points takes every stripe latch.
func DefaultStripes() int { return locktable.DefaultStripes(256) }

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
	var p optcheck.Problems
	p.Merge(o.WaitOptions.Validate())
	locktable.CheckStripes(&p, o.Stripes)
	if o.MaxLockMemory < 0 {
		p.Addf("MaxLockMemory %d is negative (0 means the default)", o.MaxLockMemory)
	}
	return p.Err()
}

// String renders the options on one line, as key=value pairs.
func (o Options) String() string {
	return fmt.Sprintf("%s stripes=%d max_lock_memory=%d escalation_barrier=%t",
		o.WaitOptions, o.Stripes, o.MaxLockMemory, o.EscalationBarrier != nil)
}
