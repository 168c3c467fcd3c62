package bench

import (
	"math/bits"
	"time"
)

// histogram records latencies in log-linear buckets: exact below 64 ns,
// then 64 buckets per power of two (a bucket is at most 1/64 = 1.6% of its
// value wide). Min, max and sum are exact. Not safe for concurrent use:
// each driver thread has its own, merged after the run.
type histogram struct {
	durationStats
	counts [histBuckets]uint64
}

// durationStats are the exact count, sum, min and max of durations: what a
// histogram, a digest's statistics and a slap's iterations keep.
type durationStats struct {
	n             uint64
	sum, min, max time.Duration
}

func (s *durationStats) add(d time.Duration) {
	if s.n == 0 || d < s.min {
		s.min = d
	}
	s.max = max(s.max, d)
	s.n++
	s.sum += d
}

func (s *durationStats) merge(o durationStats) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	s.max = max(s.max, o.max)
	s.n += o.n
	s.sum += o.sum
}

// mean is 0 when there is nothing.
func (s *durationStats) mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return s.sum / time.Duration(s.n)
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// histUpper is the largest value that falls in bucket i.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	top := uint64(i%histSub + histSub)
	return (top+1)<<shift - 1
}

func (h *histogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.durationStats.add(d)
	h.counts[histIndex(uint64(d))]++
}

func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	h.durationStats.merge(o.durationStats)
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile returns the upper end of the bucket holding the q-th quantile
// (0 < q <= 1), clamped to [min, max]; 0 for an empty histogram. Like
// sysbench, a percentile is reported as the bucket's bound.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			d := time.Duration(histUpper(i))
			return min(max(d, h.min), h.max)
		}
	}
	return h.max
}
