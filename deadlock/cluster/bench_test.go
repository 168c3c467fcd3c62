package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txnlock/txnlock"
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
