package rangelock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
)

// TestStatusReachesEveryBlocker: with random holders and a random queue of
// points and ranges, everyone a wait truly waits for — each overlapping
// holder and each overlapping request queued ahead of it that it conflicts
// with — is reachable from it through Status's Blockers
// (txnlock.WaitStatus). The waiters hold nothing, so none skips a request.
func TestStatusReachesEveryBlocker(t *testing.T) {
	randomRounds(t, 3, 60, statusReachRound)
}

// randomRounds runs round n times on one generator of stream stream, from
// a fresh seed that a failure prints.
func randomRounds(t *testing.T, stream uint64, n int, round func(*rand.Rand) error) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, stream))
	for i := range n {
		if err := round(rng); err != nil {
			t.Fatalf("seed %d round %d: %v", seed, i, err)
		}
	}
}

type reachReq struct {
	txn  txnlock.TxnID
	r    txnlock.Range
	mode txnlock.Mode
}

func statusReachRound(rng *rand.Rand) error {
	m, err := New(Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.WaitForever}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 64)
	defer func() {
		cancel()
		m.Close()
	}()
	const keys = 12
	var held []reachReq
	txn := txnlock.TxnID(1)
	for range 1 + rng.IntN(4) {
		q := reachReq{txn, randomRange(rng, keys), randomMode(rng)}
		if m.Lock(ctx, txnlock.Request{Txn: q.txn, Range: q.r, Mode: q.mode, Timeout: txnlock.NoWait}) == nil {
			held = append(held, q)
		}
		txn++
	}
	var queue []reachReq // in queue order
	for range 2 + rng.IntN(12) {
		q := reachReq{txn, randomRange(rng, keys), randomMode(rng)}
		txn++
		go func() { done <- m.Lock(ctx, txnlock.Request{Txn: q.txn, Range: q.r, Mode: q.mode}) }()
		// It is granted at once or queued; wait until Status says which.
		for deadline := time.Now().Add(10 * time.Second); ; {
			st := m.Status()
			if waitsOf(st, q.txn) {
				queue = append(queue, q)
				break
			}
			if heldBy(st, q.txn) {
				held = append(held, q)
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("txn %d neither holds nor waits", q.txn)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	st := m.Status()
	edges := map[txnlock.TxnID][]txnlock.TxnID{}
	for _, w := range st.Waits {
		edges[w.Txn] = w.Blockers
	}
	for i, q := range queue {
		reach := ddtest.Reachable(edges, q.txn)
		var truly []txnlock.TxnID
		for _, h := range held {
			if h.r.Overlaps(q.r) && !h.mode.Compatible(q.mode) {
				truly = append(truly, h.txn)
			}
		}
		for _, o := range queue[:i] {
			if o.r.Overlaps(q.r) && !o.mode.Compatible(q.mode) {
				truly = append(truly, o.txn)
			}
		}
		for _, b := range truly {
			if !reach[b] {
				return fmt.Errorf("txn %d (%v %v) waits for txn %d, which its Blockers do not reach:\n%v", q.txn, q.r, q.mode, b, st)
			}
		}
	}
	return nil
}

// randomMode is Shared or Exclusive, evenly.
func randomMode(rng *rand.Rand) txnlock.Mode {
	if rng.IntN(2) == 0 {
		return txnlock.Shared
	}
	return txnlock.Exclusive
}

func waitsOf(st txnlock.Status, txn txnlock.TxnID) bool {
	for _, w := range st.Waits {
		if w.Txn == txn {
			return true
		}
	}
	return false
}

func heldBy(st txnlock.Status, txn txnlock.TxnID) bool {
	for _, l := range st.Locks {
		for _, h := range l.Holders {
			if h == txn {
				return true
			}
		}
	}
	return false
}

// TestSpanIndex: the index finds exactly the ranges a scan finds, in
// ascending order, for random ranges with every kind of end.
func TestSpanIndex(t *testing.T) {
	for seed := range 200 {
		o := &opReader{rng: rand.New(rand.NewPCG(uint64(seed), 5))}
		rs := make([]txnlock.Range, o.next(40))
		for i := range rs {
			rs[i] = o.rangeOf()
		}
		x := newSpanIndex(len(rs), func(i int) txnlock.Range { return rs[i] })
		for range 20 {
			q := o.rangeOf()
			var want []int
			for i, r := range rs {
				if r.Overlaps(q) {
					want = append(want, i)
				}
			}
			require.Equal(t, want, x.appendOverlapping(nil, q), "seed %d, %v among %v", seed, q, rs)
		}
	}
}

// TestStatusAsTheManagerDecides: Status's Blockers of each waiter are what
// the manager's own rule answers for it, read live under its latches (the
// nearest blockers, and for a point waiter with no wide waiter over its
// key, its key's queue), also where the waiting transactions hold locks,
// so that a request skips the queued requests that wait for it
// (waitsfor.Skipped) and a point upgrade stands at the front of its key's
// queue: Status must skip and order as the manager does.
func TestStatusAsTheManagerDecides(t *testing.T) {
	randomRounds(t, 4, 200, statusDecidesRound)
}

func statusDecidesRound(rng *rand.Rand) error {
	m, err := New(Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.WaitForever}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		m.Close()
	}()
	const keys = 6
	txns := 2 + rng.IntN(8)
	// Each transaction takes what it can of a few ranges at once.
	for txn := range txns {
		for range rng.IntN(3) {
			_ = m.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(txn + 1), Range: randomRange(rng, keys), Mode: randomMode(rng), Timeout: txnlock.NoWait})
		}
	}
	// Then each asks for one more, in turn, and is granted or queued.
	for txn := range txns {
		id := txnlock.TxnID(txn + 1)
		req := txnlock.Request{Txn: id, Range: randomRange(rng, keys), Mode: randomMode(rng)}
		granted := make(chan error, 1)
		go func() { granted <- m.Lock(ctx, req) }()
		for deadline := time.Now().Add(10 * time.Second); ; {
			if waitsOf(m.Status(), id) {
				break
			}
			select {
			case err := <-granted:
				if err != nil {
					return fmt.Errorf("txn %d: %v", id, err)
				}
			default:
				if time.Now().After(deadline) {
					return fmt.Errorf("txn %d neither holds nor waits", id)
				}
				time.Sleep(50 * time.Microsecond)
				continue
			}
			break
		}
	}
	st := m.Status()
	f := m.def
	f.lockStripes()
	defer f.unlockStripes()
	n := 0
	var problems []string
	f.forEachWaiterLocked(func(w *waiter) {
		var want []txnlock.TxnID
		if w.shared {
			want = sortUnique(f.waitsForLocked(&w.request, w.seq, w.lock, w.lw, nil), 0)
		} else {
			want = f.nearestBlockersLocked(&w.request, w.seq, nil)
		}
		for _, ws := range st.Waits {
			if ws.Txn == w.txn {
				n++
				if !slices.Equal(ws.Blockers, want) {
					problems = append(problems, fmt.Sprintf("txn %d (%v %v): Status says %v, the manager %v", w.txn, w.r, w.mode, ws.Blockers, want))
				}
			}
		}
	})
	if n != len(st.Waits) {
		problems = append(problems, fmt.Sprintf("Status shows %d waits, the manager %d", len(st.Waits), n))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s\n%v", strings.Join(problems, "\n"), st)
	}
	return nil
}
