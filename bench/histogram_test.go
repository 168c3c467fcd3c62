package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistogramAgainstSort: quantiles within one bucket (1/64) of the
// exact order statistic, min/max/sum exact, merging equals adding.
func TestHistogramAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		n := 1 + rng.IntN(5000)
		var a, b histogram
		vals := make([]time.Duration, n)
		var sum time.Duration
		for i := range vals {
			// Log-uniform from 1 ns to ~100 s.
			v := time.Duration(1 << rng.IntN(37))
			v += time.Duration(rng.Int64N(int64(v)))
			vals[i] = v
			sum += v
			if i%2 == 0 {
				a.add(v)
			} else {
				b.add(v)
			}
		}
		a.merge(&b)
		slices.Sort(vals)
		require.EqualValues(t, n, a.n, round)
		assert.Equal(t, vals[0], a.min)
		assert.Equal(t, vals[n-1], a.max)
		assert.Equal(t, sum, a.sum)
		for _, q := range []float64{0.01, 0.5, 0.95, 0.99, 1} {
			rank := min(max(int(q*float64(n)+0.5), 1), n)
			exact := vals[rank-1]
			got := a.quantile(q)
			assert.GreaterOrEqual(t, got, exact, "q=%v round %d", q, round)
			assert.LessOrEqual(t, float64(got-exact), float64(exact)/histSub+1, "q=%v round %d", q, round)
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	for v := uint64(0); v < 1<<20; v += 1 + v/97 {
		i := histIndex(v)
		require.Less(t, i, histBuckets)
		require.GreaterOrEqual(t, histUpper(i), v, "v=%d", v)
		if i > 0 {
			require.Less(t, histUpper(i-1), v, "v=%d", v)
		}
	}
	assert.Less(t, histIndex(1<<63), histBuckets)
	var h histogram
	assert.Zero(t, h.quantile(0.95))
	assert.Zero(t, h.mean())
}
