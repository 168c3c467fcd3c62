package bench

import (
	"fmt"
	"math"
	"slices"
)

// Ratio compares a lock kind's QPS with the baseline's (Options.Locks[0])
// at one thread count, from the mirrored pairs of the plan: each pair
// gives one ratio, the runs of a pair being adjacent in time.
type Ratio struct {
	// Median is the median of the pairs' ratios (1 = as fast as the
	// baseline).
	Median float64 `json:"median"`
	// Lo and Hi bound the median with probability Confidence: they are
	// order statistics of the pairs' ratios (the k-th smallest and the
	// k-th largest), which needs no assumption about the noise's shape.
	// With a single pair, Lo = Hi = Median and Confidence is 0.
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
	// Pairs is the number of complete mirrored pairs.
	Pairs int `json:"pairs"`
}

// ratioConfidence is the coverage an interval aims at: the widest order
// statistics that still cover the median with at least this probability.
const ratioConfidence = 0.90

// PairedRatio is lock's Ratio to the baseline at threads, false if no
// complete pair ran there.
func (res *Result) PairedRatio(lock LockKind, threads int) (Ratio, bool) {
	return pairedRatio(res.Runs, res.Options.Locks, threads, lock)
}

// pairedRatio is lock's Ratio to locks[0] at threads over runs.
func pairedRatio(runs []*RunResult, locks []LockKind, threads int, lock LockKind) (Ratio, bool) {
	rs := pairedRatios(runs, locks, threads, lock)
	if len(rs) == 0 {
		return Ratio{}, false
	}
	r := Ratio{Pairs: len(rs)}
	r.Median, r.Lo, r.Hi, r.Confidence = medianInterval(rs)
	return r, true
}

// medianInterval returns the median of xs and the order-statistics
// interval that holds the population's median with probability conf, at
// least ratioConfidence when xs has enough samples (orderInterval); with
// one sample the interval is the sample and conf 0. It sorts xs.
func medianInterval(xs []float64) (med, lo, hi, conf float64) {
	if len(xs) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(xs)
	med = median(xs)
	k, conf := orderInterval(len(xs), ratioConfidence)
	if k == 0 {
		return med, med, med, 0
	}
	return med, xs[k-1], xs[len(xs)-k], conf
}

// Resolved reports whether the interval lies wholly on one side of 1, so
// that the run tells which kind is faster. An interval that reaches past 1
// is wider, on that side, than the difference it measures (|Median - 1|).
// A single pair resolves nothing.
func (r Ratio) Resolved() bool {
	return r.Pairs > 1 && (r.Lo > 1 || r.Hi < 1)
}

// String renders the ratio as a percentage with its interval:
// "95.2 (90.1-99.0)".
func (r Ratio) String() string {
	if r.Pairs < 2 {
		return fmt.Sprintf("%.1f", 100*r.Median)
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", 100*r.Median, 100*r.Lo, 100*r.Hi)
}

// orderInterval returns the largest k such that the k-th smallest and the
// k-th largest of n samples bound their population's median with
// probability at least conf, and that probability: 1 - 2·P(B < k) for B
// binomial(n, 1/2). With too few samples for conf it returns k = 1 and
// the lower coverage of the full range (min to max), and for n < 2 zero.
func orderInterval(n int, conf float64) (int, float64) {
	if n < 2 {
		return 0, 0
	}
	cover := func(k int) float64 {
		var tail float64 // P(B <= k-1)
		for i := range k {
			tail += binom(n, i)
		}
		return 1 - 2*tail/math.Pow(2, float64(n))
	}
	k := 1
	for k+1 <= n/2 && cover(k+1) >= conf {
		k++
	}
	return k, cover(k)
}

// binom is n choose k.
func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
