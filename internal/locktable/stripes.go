package locktable

import (
	"math/bits"
	"runtime"

	"github.com/txnlock/txnlock/internal/optcheck"
)

// MaxStripes bounds a manager's Stripes option: a column family's stripes
// are one array of latches, and a range manager's wide request takes them
// all.
const MaxStripes = 1024

// DefaultStripes is both managers' default number of stripes per column
// family: 16 × GOMAXPROCS rounded up to a power of two, at least 16 and at
// most limit.
//
// Why 16 per processor: at most GOMAXPROCS goroutines run at once, so with
// 16 stripes per processor two running requests for random keys share a
// stripe with probability about 1/16 per pair, and a stripe's critical
// section is a few table operations, so a collision costs a short spin of
// the stripe's latch (internal/latch), not a sleep. RocksDB's fixed 16
// stripes are contended as soon as a machine has more than a few cores.
func DefaultStripes(limit int) int {
	n := 16 * runtime.GOMAXPROCS(0)
	return min(max(1<<bits.Len(uint(n-1)), 16), limit)
}

// CheckStripes records in p what is wrong with a Stripes option of n, if
// anything: 0 (the default) and powers of two up to MaxStripes are valid.
func CheckStripes(p *optcheck.Problems, n int) {
	switch {
	case n < 0:
		p.Addf("Stripes %d is negative (0 means the default)", n)
	case n > MaxStripes:
		p.Addf("Stripes %d is above %d", n, MaxStripes)
	case n&(n-1) != 0:
		p.Addf("Stripes %d is not a power of two", n)
	}
}
