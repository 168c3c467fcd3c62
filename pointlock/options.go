package pointlock

import (
	"fmt"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// MaxStripes bounds Options.Stripes.
const MaxStripes = locktable.MaxStripes

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
// above 16 × GOMAXPROCS, at least 16, so that two requests running at once
// for random keys rarely share a stripe. A stripe costs 128 bytes per
// column family.
func DefaultStripes() int { return locktable.DefaultStripes(MaxStripes) }

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
	var p optcheck.Problems
	p.Merge(o.WaitOptions.Validate())
	locktable.CheckStripes(&p, o.Stripes)
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
