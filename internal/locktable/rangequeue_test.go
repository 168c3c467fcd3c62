package locktable

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// TestRangeQueueModel checks RangeQueue against a plain list: after random
// pushes and removes, Overlapping finds exactly the waiters queued before
// a random seq (or all of them) whose ranges overlap a random range, in
// (start, seq) order, and stops when told; the FIFO list keeps the order
// of the pushes.
func TestRangeQueueModel(t *testing.T) {
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
			r, _ := txnlock.NewRange(a.Start(), txnlock.All().End())
			return r
		case 2:
			return a
		}
		r, _ := txnlock.NewRange(a.Start(), b.End())
		return r
	}
	type queued struct {
		w   *lockwait.Waiter
		seq uint64
	}
	for round := range 300 {
		var x RangeQueue
		var live []queued // in queue order
		seq := uint64(0)
		for range 60 {
			if len(live) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(live))
				x.Remove(live[i].w, live[i].seq)
				live = slices.Delete(live, i, i+1)
			} else {
				seq++
				w := lockwait.New(1, txnlock.LockRef{Range: randRange()}, time.Time{})
				x.PushBack(w, seq)
				live = append(live, queued{w, seq})
			}
			var fifo []*lockwait.Waiter
			for w := x.Front(); w != nil; w = w.Next() {
				fifo = append(fifo, w)
			}
			if len(fifo) != len(live) || x.Len() != len(live) {
				t.Fatalf("seed %d round %d: %d queued, want %d", seed, round, len(fifo), len(live))
			}
			for i := range fifo {
				if fifo[i] != live[i].w {
					t.Fatalf("seed %d round %d: the FIFO order differs at %d", seed, round, i)
				}
			}
			q := randRange()
			before := ^uint64(0)
			if rng.IntN(2) == 0 {
				before = 1 + rng.Uint64N(seq+1)
			}
			var want []queued
			for _, e := range live {
				if e.w.Lock.Range.Overlaps(q) && e.seq < before {
					want = append(want, e)
				}
			}
			slices.SortFunc(want, func(a, b queued) int {
				if c := a.w.Lock.Range.Start().Compare(b.w.Lock.Range.Start()); c != 0 {
					return c
				}
				return int(a.seq) - int(b.seq)
			})
			var got []*lockwait.Waiter
			x.Overlapping(q, before, func(w *lockwait.Waiter) bool { got = append(got, w); return true })
			if len(got) != len(want) {
				t.Fatalf("seed %d round %d: Overlapping %v before %d: got %d waiters, want %d", seed, round, q, before, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i].w {
					t.Fatalf("seed %d round %d: Overlapping %v before %d: waiter %d differs", seed, round, q, before, i)
				}
			}
			if len(want) > 1 {
				got = got[:0]
				x.Overlapping(q, before, func(w *lockwait.Waiter) bool { got = append(got, w); return false })
				if len(got) != 1 {
					t.Fatalf("seed %d round %d: no stop after the first", seed, round)
				}
			}
		}
	}
}
