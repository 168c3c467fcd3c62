package rangelock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

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
	for i := range 60 {
		if err := statusReachRound(rng); err != nil {
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
	queued := make(chan txnlock.TxnID, 1)
	m.queued = func(txn txnlock.TxnID) { queued <- txn }
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	defer func() {
		cancel()
		m.Close()
		for _, d := range done {
			<-d
		}
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
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- m.Lock(ctx, txnlock.Request{Txn: q.txn, Range: q.r, Mode: q.mode}) }()
		// It is granted at once, or it queues (the queued hook).
		select {
		case err := <-d:
			if err != nil {
				return fmt.Errorf("txn %d: %v", q.txn, err)
			}
			d <- nil // for the deferred collection
			held = append(held, q)
		case <-queued:
			queue = append(queue, q)
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
