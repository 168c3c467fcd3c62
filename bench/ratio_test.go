package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOrderInterval: the widest order statistics that cover the median
// with at least 90%, and their exact coverage.
func TestOrderInterval(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		cov  float64
	}{
		{1, 0, 0},
		{2, 1, 0.5},
		{4, 1, 0.875},
		{5, 1, 0.9375},
		{8, 2, 1 - 2*9.0/256},
		{20, 6, 1 - 2*0.020694732666015625},
	} {
		k, cov := orderInterval(tc.n, 0.9)
		assert.Equal(t, tc.k, k, "n=%d", tc.n)
		assert.InDelta(t, tc.cov, cov, 1e-12, "n=%d", tc.n)
	}
}

// pairedRuns returns runs of one mirrored pair per ratio at threads, the
// baseline point at 1000 tps.
func pairedRuns(threads int, ratios ...float64) []*RunResult {
	var runs []*RunResult
	for i, r := range ratios {
		order := runOrder([]LockKind{LockPoint, LockRange}, 2)[4*(i%2) : 4*(i%2)+4]
		for _, l := range order {
			txns := uint64(1000)
			if l == LockRange {
				txns = uint64(1000 * r)
			}
			run := runAt(l, threads, txns, time.Millisecond)
			run.Seq = len(runs) + 1
			runs = append(runs, run)
		}
	}
	return runs
}

// TestPairedRatio: the median of the pairs with the interval of its order
// statistics; resolved only when the interval lies on one side of 1.
func TestPairedRatio(t *testing.T) {
	res := &Result{Options: Options{Locks: []LockKind{LockPoint, LockRange}, Threads: []int{4}}}
	res.Runs = pairedRuns(4, 0.80, 0.84, 0.79, 0.82, 0.81)
	r, ok := res.PairedRatio(LockRange, 4)
	require.True(t, ok)
	assert.InDelta(t, 0.81, r.Median, 1e-9)
	assert.InDelta(t, 0.79, r.Lo, 1e-9)
	assert.InDelta(t, 0.84, r.Hi, 1e-9)
	assert.InDelta(t, 0.9375, r.Confidence, 1e-9)
	assert.Equal(t, 5, r.Pairs)
	assert.True(t, r.Resolved())
	assert.Equal(t, "81.0 (79.0-84.0)", r.String())

	res.Runs = pairedRuns(4, 0.97, 1.05, 0.99, 1.01, 0.98)
	r, _ = res.PairedRatio(LockRange, 4)
	assert.False(t, r.Resolved(), "an interval across 1 around a 1-point difference")

	res.Runs = pairedRuns(4, 0.80, 0.90, 0.93, 0.95, 0.97)
	r, _ = res.PairedRatio(LockRange, 4)
	assert.True(t, r.Resolved(), "wide, but wholly below 1")

	res.Runs = pairedRuns(4, 0.5)
	r, _ = res.PairedRatio(LockRange, 4)
	assert.False(t, r.Resolved(), "one pair resolves nothing")
	assert.Equal(t, "50.0", r.String())
	_, ok = res.PairedRatio(LockRange, 8)
	assert.False(t, ok)
}

// TestWriteCostsWithoutOneThread: without a 1-thread run only the
// driver's own time is printed, and not as a 1-thread figure.
func TestWriteCostsWithoutOneThread(t *testing.T) {
	res := testResult()
	res.Options.Threads = []int{100}
	res.Cells = summarize(res.Runs[4:], res.Options.Locks, res.Options.Threads)
	var buf bytes.Buffer
	writeCosts(&buf, res)
	assert.Equal(t, "driver's own time per transaction (1 thread, no table): 0.80 µs\n", buf.String())
	res.DriverOverhead = 0
	buf.Reset()
	writeCosts(&buf, res)
	assert.Empty(t, buf.String())
}
