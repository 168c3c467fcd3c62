package pointlock

import (
	"fmt"
	"runtime"

	"github.com/txnlock/txnlock"
)

// MaxStripes bounds Options.Stripes.
const MaxStripes = 1 << 16

// Options configure a Manager. The zero Options are valid: EnsureDefaults
// fills every zero field.
type Options struct {
	txnlock.WaitOptions

	// Stripes is the number of hash stripes of each column family's lock
	// map (a power of two, at most MaxStripes). Each stripe is a mutex, a
	// map and counters; requests for keys in different stripes never share
	// a mutex. Default: DefaultStripes(), the next power of two at or above
	// 16 × GOMAXPROCS, at least 16.
	Stripes int

	// MaxLocks limits the distinct keys locked in the whole manager, over
	// all column families (a key with several shared holders counts once).
	// A request for a new key beyond the limit fails at once with
	// ErrLockLimit; requests for keys already locked still succeed.
	// Default: 0, unlimited.
	MaxLocks int
}

// DefaultStripes is Options.Stripes' default: the next power of two at or
// above 16 × GOMAXPROCS, at least 16.
//
// Why 16 per processor: at most GOMAXPROCS goroutines run at once, so with
// 16 stripes per processor two running requests for random keys share a
// stripe with probability about 1/16 per pair, and a stripe's critical
// section is a few map operations, so a collision costs a few retries of
// the stripe's latch (internal/latch), not a sleep. A stripe costs about
// 128 bytes per column family, so the default is 4 KiB per column family
// on a 2-processor machine and 128 KiB on a 64-processor one. RocksDB's
// fixed 16 stripes are contended as soon as a machine has more than a few
// cores.
func DefaultStripes() int {
	n := 16 * runtime.GOMAXPROCS(0)
	s := 16
	for s < n && s < MaxStripes {
		s <<= 1
	}
	return s
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	o.WaitOptions.EnsureDefaults()
	if o.Stripes == 0 {
		o.Stripes = DefaultStripes()
	}
}

// Validate reports every problem of o at once. Zero fields are valid:
// they mean the defaults that EnsureDefaults fills in.
func (o *Options) Validate() error {
	var p txnlock.Problems
	p.Merge(o.WaitOptions.Validate())
	switch {
	case o.Stripes < 0:
		p.Addf("Stripes %d is negative", o.Stripes)
	case o.Stripes > MaxStripes:
		p.Addf("Stripes %d is above %d", o.Stripes, MaxStripes)
	case o.Stripes&(o.Stripes-1) != 0:
		p.Addf("Stripes %d is not a power of two", o.Stripes)
	}
	if o.MaxLocks < 0 {
		p.Addf("MaxLocks %d is negative (0 means unlimited)", o.MaxLocks)
	}
	return p.Err()
}

// String renders the options on one line, as key=value pairs.
func (o Options) String() string {
	limit := "unlimited"
	if o.MaxLocks > 0 {
		limit = fmt.Sprint(o.MaxLocks)
	}
	return fmt.Sprintf("%s stripes=%d max_locks=%s", o.WaitOptions, o.Stripes, limit)
}
