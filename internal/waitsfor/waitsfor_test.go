package waitsfor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
)

const (
	S = txnlock.Shared
	X = txnlock.Exclusive
)

// scan runs a Scanner over queue and returns each request's list.
func scan(holders []Holder, queue []Request) [][]txnlock.TxnID {
	s := NewScanner(holders, nil)
	out := make([][]txnlock.TxnID, len(queue))
	for i, r := range queue {
		out[i] = s.Next(nil, r)
	}
	return out
}

func TestRule(t *testing.T) {
	ids := func(ids ...txnlock.TxnID) []txnlock.TxnID { return ids }
	for _, tc := range []struct {
		name    string
		holders []Holder
		queue   []Request
		want    [][]txnlock.TxnID
	}{{
		name:    "a queue of Exclusive requests: each waits for the one ahead",
		holders: []Holder{{1, X}},
		queue:   []Request{{Txn: 2, Mode: X}, {Txn: 3, Mode: X}, {Txn: 4, Mode: X}},
		want:    [][]txnlock.TxnID{ids(1), ids(2), ids(3)},
	}, {
		name:    "Shared requests wait for the nearest Exclusive one, an Exclusive one for the run of Shared ones",
		holders: []Holder{{1, S}},
		queue:   []Request{{Txn: 2, Mode: X}, {Txn: 3, Mode: S}, {Txn: 4, Mode: S}, {Txn: 5, Mode: X}, {Txn: 6, Mode: S}},
		want:    [][]txnlock.TxnID{ids(1), ids(2), ids(2), ids(3, 4), ids(5)},
	}, {
		name:    "Shared requests behind an Exclusive holder and no queued Exclusive request wait for the holder",
		holders: []Holder{{9, X}},
		queue:   []Request{{Txn: 3, Mode: S}, {Txn: 2, Mode: S}, {Txn: 4, Mode: X}},
		want:    [][]txnlock.TxnID{ids(9), ids(9), ids(2, 3)},
	}, {
		name:    "an upgrade waits for the other holders only, and is waited for",
		holders: []Holder{{1, S}, {2, S}, {3, S}},
		queue:   []Request{{Txn: 2, Mode: X, Upgrade: true}, {Txn: 4, Mode: S}, {Txn: 5, Mode: X}},
		want:    [][]txnlock.TxnID{ids(1, 3), ids(2), ids(4)},
	}, {
		name:    "a transaction's own requests are skipped",
		holders: []Holder{{1, X}},
		queue:   []Request{{Txn: 2, Mode: S}, {Txn: 3, Mode: S}, {Txn: 3, Mode: X}},
		want:    [][]txnlock.TxnID{ids(1), ids(1), ids(2)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := scan(tc.holders, tc.queue)
			require.Equal(t, tc.want, got)
			// The backward walk of a request that is not yet queued
			// (NoWait, a timed-out waiter) agrees with the scan.
			for i, r := range tc.queue {
				require.Equal(t, got[i], of(tc.holders, tc.queue[:i], r), "request %d", i)
			}
		})
	}
}

// of is Of by the backward walk, as a manager computes one request's list.
func of(holders []Holder, ahead []Request, r Request) []txnlock.TxnID {
	if !r.Upgrade {
		if dst := Nearest(nil, slices.Backward(ahead), r.Txn, r.Mode); len(dst) > 0 {
			return dst
		}
	}
	return Holders(nil, holders, r.Txn, r.Mode)
}

// randomQueue makes a queue a manager can have: Shared holders with their
// upgrades at the front and an Exclusive request first among the rest, or
// one Exclusive holder; one request per transaction.
func randomQueue(rng *rand.Rand) ([]Holder, []Request) {
	var holders []Holder
	var queue []Request
	next := txnlock.TxnID(1)
	if rng.IntN(2) == 0 {
		holders = append(holders, Holder{next, X})
		next++
	} else {
		for range 1 + rng.IntN(4) {
			holders = append(holders, Holder{next, S})
			if rng.IntN(4) == 0 {
				queue = append(queue, Request{Txn: next, Mode: X, Upgrade: true})
			}
			next++
		}
		queue = append(queue, Request{Txn: next, Mode: X})
		next++
	}
	for range rng.IntN(40) {
		m := S
		if rng.IntN(3) == 0 {
			m = X
		}
		queue = append(queue, Request{Txn: next, Mode: m})
		next++
	}
	return holders, queue
}

// TestReachable: everyone a request truly waits for (each conflicting
// holder and each conflicting request queued ahead) is reachable from it
// through the lists, and the lists of a queue add up to O(N).
func TestReachable(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 500 {
		holders, queue := randomQueue(rng)
		lists := scan(holders, queue)
		edges := map[txnlock.TxnID][]txnlock.TxnID{}
		total := 0
		for i, r := range queue {
			edges[r.Txn] = lists[i]
			if len(lists[i]) > 1 && !slices.Equal(lists[i], Holders(nil, holders, r.Txn, r.Mode)) {
				total += len(lists[i])
			}
			if got := of(holders, queue[:i], r); !slices.Equal(lists[i], got) {
				t.Fatalf("seed %d round %d: request %d: the walk back gives %v, the scan %v", seed, round, i, got, lists[i])
			}
		}
		require.LessOrEqual(t, total, len(queue), "seed %d round %d: runs are listed once", seed, round)
		for i, r := range queue {
			reach := ddtest.Reachable(edges, r.Txn)
			truly := Holders(nil, holders, r.Txn, r.Mode)
			if !r.Upgrade {
				for _, o := range queue[:i] {
					if !o.Mode.Compatible(r.Mode) {
						truly = append(truly, o.Txn)
					}
				}
			}
			for _, b := range truly {
				if !reach[b] {
					t.Fatalf("seed %d round %d: %v in %v: %d unreachable; lists %v", seed, round, r, queue, b, lists)
				}
			}
		}
	}
}

// BenchmarkScan: a Scanner over a queue of N requests costs O(N).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			queue := make([]Request, n)
			for i := range queue {
				queue[i] = Request{Txn: txnlock.TxnID(i + 2), Mode: []txnlock.Mode{S, S, X}[i%3]}
			}
			holders := []Holder{{1, X}}
			var dst []txnlock.TxnID
			var buf []Request
			for b.Loop() {
				s := NewScanner(holders, buf)
				dst = dst[:0]
				for _, r := range queue {
					dst = s.Next(dst, r)
				}
				buf = s.ahead
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	k, m := txnlock.Point([]byte("k")), txnlock.Point([]byte("m"))
	km, _ := txnlock.NewRange(k.Start(), m.End())
	for _, tc := range []struct {
		name   string
		ahead  []Queued
		holder bool
		want   []bool
	}{{
		name: "a request waiting for T, and the requests behind it on its key",
		// T2 X on k waits for T's Shared k; T3 S behind it; T4 S on m is
		// free of both.
		ahead: []Queued{{Txn: 2, Mode: X, Range: k, WaitsForT: true}, {Txn: 3, Mode: S, Range: k}, {Txn: 4, Mode: S, Range: m}},
		want:  []bool{true, true, false},
	}, {
		name: "through a wide request: T3's range is behind T2's, T4's behind T3's",
		ahead: []Queued{{Txn: 2, Mode: X, Range: k, WaitsForT: true}, {Txn: 3, Mode: S, Range: km},
			{Txn: 4, Mode: X, Range: m}, {Txn: 5, Mode: S, Range: m}},
		want: []bool{true, true, true, true},
	}, {
		name:  "compatible requests behind a skipped one are not blocked by it",
		ahead: []Queued{{Txn: 2, Mode: S, Range: k, WaitsForT: true}, {Txn: 3, Mode: S, Range: k}},
		want:  []bool{true, false},
	}, {
		name:  "a transaction is not blocked by its own request",
		ahead: []Queued{{Txn: 2, Mode: X, Range: k, WaitsForT: true}, {Txn: 2, Mode: X, Range: k}, {Txn: 3, Mode: S, Range: km}},
		want:  []bool{true, false, true},
	}, {
		name: "a holder passes the requests of idle transactions, not those behind them",
		// T2 (idle) X on k; T3 (a holder) S on k behind it, and T4 (idle)
		// X on m; T's request skips T2 and T4, and waits for T3.
		ahead:  []Queued{{Txn: 2, Mode: X, Range: k, Idle: true}, {Txn: 3, Mode: S, Range: k}, {Txn: 4, Mode: X, Range: m, Idle: true}},
		holder: true,
		want:   []bool{true, false, true},
	}, {
		name:  "a transaction that holds nothing skips nothing",
		ahead: []Queued{{Txn: 2, Mode: X, Range: k, Idle: true}, {Txn: 3, Mode: S, Range: km, Idle: true}},
		want:  []bool{false, false},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			holder := tc.holder
			for _, q := range tc.ahead {
				holder = holder || q.WaitsForT // T holds what they wait for
			}
			require.Equal(t, tc.want, Skipped(tc.ahead, holder))
		})
	}
}

// TestSkippedModel compares Skipped with its definition, pair by pair, on
// random queues of points and ranges over a few keys, for a holder's
// request and for an idle transaction's.
func TestSkippedModel(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	keys := []string{"a", "b", "c", "d"}
	for round := range 1000 {
		ahead := make([]Queued, rng.IntN(12))
		for i := range ahead {
			lo := rng.IntN(len(keys))
			r := txnlock.Point([]byte(keys[lo]))
			if rng.IntN(3) == 0 {
				hi := lo + rng.IntN(len(keys)-lo)
				r, _ = txnlock.NewRange(r.Start(), txnlock.Point([]byte(keys[hi])).End())
			}
			ahead[i] = Queued{Txn: txnlock.TxnID(2 + rng.IntN(5)), Mode: []txnlock.Mode{S, X}[rng.IntN(2)], Range: r,
				WaitsForT: rng.IntN(5) == 0, Idle: rng.IntN(4) == 0}
		}
		holder := rng.IntN(4) > 0
		// blocked: cannot be granted before T releases something.
		blocked := make([]bool, len(ahead))
		want := make([]bool, len(ahead))
		for i, c := range ahead {
			blocked[i] = c.WaitsForT
			for j := range i {
				p := ahead[j]
				blocked[i] = blocked[i] || (blocked[j] && p.Txn != c.Txn && !p.Mode.Compatible(c.Mode) && p.Range.Overlaps(c.Range))
			}
			want[i] = blocked[i] || (holder && c.Idle)
		}
		if got := Skipped(ahead, holder); !slices.Equal(want, got) {
			t.Fatalf("seed %d round %d: %v: got %v, want %v", seed, round, ahead, got, want)
		}
	}
}

// TestSpread: on one key Spread lists what the nearest-requests rule
// lists; over keys apart, the nearest conflicting request on each key.
func TestSpread(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 5))
	k := txnlock.Point([]byte("k"))
	for round := range 500 {
		_, queue := randomQueue(rng)
		var queued []Queued
		for i, r := range queue {
			if !r.Upgrade {
				want := Nearest(nil, slices.Backward(queue[:i]), r.Txn, r.Mode)
				got := Spread(nil, queued, r.Txn, r.Mode)
				require.Equal(t, want, got, "seed %d round %d request %d", seed, round, i)
			}
			queued = append(queued, Queued{Txn: r.Txn, Mode: r.Mode, Range: k})
		}
	}
	a, c := txnlock.Point([]byte("a")), txnlock.Point([]byte("c"))
	ac, err := txnlock.Inclusive([]byte("a"), []byte("c"))
	require.NoError(t, err)
	ahead := []Queued{
		{Txn: 1, Mode: X, Range: a},
		{Txn: 2, Mode: S, Range: c},
		{Txn: 3, Mode: X, Range: c},
		{Txn: 4, Mode: S, Range: a}, // waits for 1
	}
	require.Equal(t, []txnlock.TxnID{3, 4}, Spread(nil, ahead, 9, X),
		"3 on c (it waits for 2), 4 on a (it waits for 1)")
	require.Equal(t, []txnlock.TxnID{1, 3}, Spread(nil, ahead, 9, S),
		"a Shared request waits for the Exclusive ones")
	require.Equal(t, []txnlock.TxnID{2, 5}, Spread(nil, append(ahead[:2:2], Queued{Txn: 5, Mode: S, Range: ac}), 9, X),
		"5 waits for 1 but not for 2, Shared as it is")
	ahead[3].MaySkip = true
	require.Equal(t, []txnlock.TxnID{1, 3, 4}, Spread(nil, ahead, 9, X),
		"4 may skip 1 (its transaction holds what 1 waits for): 1 is listed too")
}
