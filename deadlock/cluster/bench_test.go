package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
)

// BenchmarkCrossNodeCycle closes b.N two-node cycles, eight at a time on
// disjoint keys, with the default Delay (100 ms), and reports the p50 and
// p99 of the time from the closing Lock call to its error (the closing
// transaction is the younger, so the victim). Run it with
// -benchtime=1000x or more.
func BenchmarkCrossNodeCycle(b *testing.B) {
	ec := startEtcd(b, 3)
	x, y := join(b, ec, "x", nil), join(b, ec, "y", nil)
	connected(b, x, y)
	const parallel = 8
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var txns atomic.Uint64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range parallel {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				older, younger := txnlock.TxnID(txns.Add(2)-1), txnlock.TxnID(0)
				younger = older + 1
				k1, k2 := fmt.Sprintf("a%d-%d", w, older), fmt.Sprintf("b%d-%d", w, older)
				if x.lock(older, k1, txnlock.Exclusive) != nil || y.lock(younger, k2, txnlock.Exclusive) != nil {
					b.Error("lock")
					return
				}
				first := y.goLock(older, k2)
				y.waiting(b, older)
				start := time.Now()
				err := x.lock(younger, k1, txnlock.Exclusive)
				d := time.Since(start)
				if !errors.Is(err, txnlock.ErrDeadlock) {
					b.Errorf("closing lock: %v", err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				_ = y.m.UnlockAll(younger)
				if err := <-first; err != nil {
					b.Errorf("older: %v", err)
					return
				}
				_ = x.m.UnlockAll(older)
				_ = y.m.UnlockAll(older)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkShortWaits: 64 goroutines take turns locking one key
// exclusively, so every wait is short (microseconds, well under Delay).
// detect=local gives the managers a deadlock.Detector, detect=cluster a
// joined Node (which wraps one): compare their ns/op, side by side. The
// deltas metric is the messages the node sent with waits in them: none.
func BenchmarkShortWaits(b *testing.B) {
	ec := startEtcd(b, 1)
	node := join(b, ec, "x", nil)
	connected(b, node)
	local, err := deadlock.New(deadlock.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	for _, tc := range []struct {
		name string
		det  txnlock.Detector
	}{{"detect=local", local}, {"detect=cluster", node}} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: tc.det, LockTimeout: time.Minute}})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			before := node.Stats().Deltas
			var left atomic.Int64
			left.Store(int64(b.N))
			var next atomic.Uint64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 64 {
				wg.Go(func() {
					key := txnlock.Point([]byte("hot"))
					for left.Add(-1) >= 0 {
						txn := txnlock.TxnID(next.Add(1))
						if err := m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: key, Mode: txnlock.Exclusive}); err != nil {
							b.Error(err)
							return
						}
						_ = m.UnlockAll(txn)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(node.Stats().Deltas-before), "deltas")
		})
	}
}
