package txnlock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
)

// grantAll is a manager that grants every request at once and holds
// nothing: a handle over it costs only the handle's own work.
type grantAll struct{ txnlock.Manager }

func (grantAll) Lock(context.Context, txnlock.Request) error { return nil }
func (grantAll) UnlockAll(txnlock.TxnID) error               { return nil }

// BenchmarkTxnLock: ns/op is per lock request through a handle, in
// transactions of points distinct Exclusive point locks, each transaction
// a new handle ended by Release (both counted in). manager=grant is the
// handle's own cost; manager=point adds pointlock's. The cost of one more
// request in place is (8*ns(points=8) - ns(points=1)) / 7.
func BenchmarkTxnLock(b *testing.B) {
	pm, err := pointlock.New(pointlock.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pm.Close()
	for _, mc := range []struct {
		name string
		m    txnlock.Manager
	}{{"grant", grantAll{}}, {"point", pm}} {
		for _, points := range []int{1, 8} {
			b.Run(fmt.Sprintf("manager=%s/points=%d", mc.name, points), func(b *testing.B) {
				benchTxnLock(b, mc.m, points)
			})
		}
	}
}

func benchTxnLock(b *testing.B, m txnlock.Manager, points int) {
	ctx := context.Background()
	reqs := make([]txnlock.Request, points)
	for i := range reqs {
		reqs[i] = txnlock.Request{Range: txnlock.Point(fmt.Appendf(nil, "sbtest1/%08d", 1000*i+7)), Mode: txnlock.Exclusive}
	}
	b.ReportAllocs()
	var h *txnlock.Txn
	var id txnlock.TxnID
	for i := 0; b.Loop(); i++ {
		if i%points == 0 {
			if h != nil {
				if err := h.Release(); err != nil {
					b.Fatal(err)
				}
			}
			id++
			h = txnlock.NewTxn(id)
		}
		if err := h.Lock(ctx, m, reqs[i%points]); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Release(); err != nil {
		b.Fatal(err)
	}
}
