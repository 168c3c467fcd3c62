package rangelock

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 3))
	for round := range 60 {
		if err := statusReachRound(rng); err != nil {
			t.Fatalf("seed %d round %d: %v", seed, round, err)
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
	mode := func() txnlock.Mode {
		if rng.IntN(2) == 0 {
			return txnlock.Shared
		}
		return txnlock.Exclusive
	}
	var held []reachReq
	txn := txnlock.TxnID(1)
	for range 1 + rng.IntN(4) {
		q := reachReq{txn, randomRange(rng, keys), mode()}
		if m.Lock(ctx, txnlock.Request{Txn: q.txn, Range: q.r, Mode: q.mode, Timeout: txnlock.NoWait}) == nil {
			held = append(held, q)
		}
		txn++
	}
	var queue []reachReq // in queue order
	for range 2 + rng.IntN(12) {
		q := reachReq{txn, randomRange(rng, keys), mode()}
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
