package rangelock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/txnlock/txnlock"
)

// TestWideIndexModel checks wideIndex against a plain list: after random
// inserts and removes, overlapping finds exactly the waiters queued before
// a random seq (or all of them) whose ranges overlap a random range, in
// (start, seq) order, and stops when told.
func TestWideIndexModel(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 3))
	bound := func() txnlock.Range { return txnlock.Point(fmt.Appendf(nil, "%02d", rng.IntN(30))) }
	randRange := func() txnlock.Range {
		a, b := bound(), bound()
		if a.Start().Compare(b.Start()) > 0 {
			a, b = b, a
		}
		switch rng.IntN(6) {
		case 0:
			return txnlock.All()
		case 1:
			r, _ := txnlock.RangeFromBounds(a.Start(), txnlock.All().End())
			return r
		case 2:
			return a
		}
		r, _ := txnlock.RangeFromBounds(a.Start(), b.End())
		return r
	}
	for round := range 300 {
		var x wideIndex
		var live []*waiter
		seq := uint64(0)
		for range 60 {
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				x.remove(live[i])
				live = slices.Delete(live, i, i+1)
			} else {
				seq++
				w := &waiter{request: request{r: randRange()}, seq: seq}
				x.insert(w)
				live = append(live, w)
			}
			q := randRange()
			bound := newRequest
			if rng.IntN(2) == 0 {
				bound = 1 + rng.Uint64N(seq+1)
			}
			var want []*waiter
			for _, w := range live {
				if w.r.Overlaps(q) && w.seq < bound {
					want = append(want, w)
				}
			}
			slices.SortFunc(want, func(a, b *waiter) int {
				if before(a, b) {
					return -1
				}
				return 1
			})
			var got []*waiter
			x.overlapping(q, bound, func(w *waiter) bool { got = append(got, w); return true })
			if !slices.Equal(want, got) {
				t.Fatalf("seed %d round %d: overlapping %v before %d: got %d waiters, want %d", seed, round, q, bound, len(got), len(want))
			}
			if len(want) > 1 {
				got = got[:0]
				x.overlapping(q, bound, func(w *waiter) bool { got = append(got, w); return false })
				if len(got) != 1 {
					t.Fatalf("seed %d round %d: no stop after the first", seed, round)
				}
			}
		}
	}
}
