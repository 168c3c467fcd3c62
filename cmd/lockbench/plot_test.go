package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/txnlock/txnlock/bench"
)

// outlierResult is a plan of point and range at 1..100 threads whose
// ratios lie between 90% and 100%, but for one pair at 8 threads whose
// ratio is 2,592%: the interval's top there.
func outlierResult() *bench.Result {
	o := bench.Options{Locks: []bench.LockKind{bench.LockPoint, bench.LockRange}, Threads: []int{1, 2, 4, 8, 16, 32, 64, 100}, Pairs: 5}
	o.EnsureDefaults()
	res := &bench.Result{Options: o}
	for i, t := range o.Threads {
		med := 0.90 + 0.01*float64(i)
		hi := med + 0.03
		if t == 8 {
			hi = 25.92
		}
		qps := 100000 + 10000*float64(i)
		res.Cells = append(res.Cells,
			bench.Cell{Lock: bench.LockPoint, Threads: t, Runs: 10, QPSMedian: qps, QPSLo: qps * 0.97, QPSHi: qps * 1.02},
			bench.Cell{Lock: bench.LockRange, Threads: t, Runs: 10, QPSMedian: qps * med, QPSLo: qps * med * 0.96, QPSHi: qps * med * 1.03,
				Ratio: &bench.Ratio{Median: med, Lo: med - 0.02, Hi: hi, Confidence: 0.94, Pairs: 5}})
	}
	return res
}

// TestRatioLimitsIgnoreOutliers: one pair far off does not stretch the
// ratio axis: every median and every bar end but the outlier lies within
// it, and the outlier is labelled with its value.
func TestRatioLimitsIgnoreOutliers(t *testing.T) {
	res := outlierResult()
	var pts []ratioPoint
	for _, c := range res.Cells {
		if r := c.Ratio; r != nil {
			pts = append(pts, ratioPoint{x: float64(c.Threads), med: 100 * r.Median, lo: 100 * r.Lo, hi: 100 * r.Hi})
		}
	}
	lo, hi := ratioLimits(pts)
	for _, p := range pts {
		assert.True(t, lo <= p.lo && p.med <= hi, "%+v within [%.1f, %.1f]", p, lo, hi)
		if p.hi < 1000 {
			assert.LessOrEqual(t, p.hi, hi, "%+v", p)
		}
	}
	assert.Less(t, hi, 150.0, "the outlier does not set the axis")
	assert.Greater(t, lo, 50.0)

	file := filepath.Join(t.TempDir(), "plot.svg")
	require.NoError(t, writePlot(file, res))
	svg, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(svg), ">2592<", "the clipped bar end is labelled with its value")
	assert.NotContains(t, string(svg), ".00<", "tick labels carry no needless decimals")
}

// TestPlainTicks: labels with the decimals the step needs, no more: 100,
// not 100.00; 99.8, 100.0, 100.2.
func TestPlainTicks(t *testing.T) {
	for r, decimals := range map[[2]float64]int{{0, 2600}: 0, {80, 120}: 0, {99, 101.5}: 0, {99.8, 100.3}: 1} {
		var labels []string
		for _, tk := range (plainTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			labels = append(labels, tk.Label)
			v, err := strconv.ParseFloat(tk.Label, 64)
			require.NoError(t, err)
			assert.InDelta(t, tk.Value, v, 1e-9, "%v", r)
			_, frac, _ := strings.Cut(tk.Label, ".")
			assert.Len(t, frac, decimals, "%v: %s", r, tk.Label)
		}
		assert.GreaterOrEqual(t, len(labels), 2, "%v", r)
	}
}
