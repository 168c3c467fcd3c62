// Package contention holds the benchmarks of both managers under one hot
// key: how a queue of N waiters forms, what a Status snapshot of it costs,
// and what a scrape costs the key's releases.
package contention

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
	"go.uber.org/goleak"
)

var hot = txnlock.Point([]byte("hot"))

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newManager(tb testing.TB, kind string) txnlock.Manager {
	var m txnlock.Manager
	var err error
	switch kind {
	case "point":
		m, err = pointlock.New(pointlock.Options{})
	case "range":
		m, err = rangelock.New(rangelock.Options{})
	}
	require.NoError(tb, err)
	return m
}

// queue makes txn 1 hold the hot key and n transactions (2..n+1) wait for
// it in mode; each granted waiter calls granted and then unlocks. It
// returns once all n are queued, and a func that waits for them to end.
func queue(tb testing.TB, m txnlock.Manager, n int, mode txnlock.Mode, granted func(txn txnlock.TxnID)) (wait func()) {
	ctx := context.Background()
	require.NoError(tb, m.Lock(ctx, txnlock.Request{Txn: 1, Range: hot, Mode: txnlock.Exclusive}))
	var wg sync.WaitGroup
	for i := range n {
		txn := txnlock.TxnID(i + 2)
		wg.Go(func() {
			if err := m.Lock(ctx, txnlock.Request{Txn: txn, Range: hot, Mode: mode, Timeout: txnlock.WaitForever}); err != nil {
				tb.Error(err)
				return
			}
			if granted != nil {
				granted(txn)
			}
			if err := m.UnlockAll(txn); err != nil {
				tb.Error(err)
			}
		})
	}
	for m.Stats().Waiting < int64(n) {
		runtime.Gosched()
	}
	return wg.Wait
}

// BenchmarkQueue: time for n waiters to queue on one key held Exclusive,
// and to be granted one by one after the holder leaves. Joining, leaving
// and being granted cost O(1) each, so the time per waiter (ns/waiter)
// stays flat from 1,000 to 8,000.
func BenchmarkQueue(b *testing.B) {
	for _, kind := range []string{"point", "range"} {
		for _, n := range []int{1000, 8000} {
			b.Run(fmt.Sprintf("%s/waiters=%d", kind, n), func(b *testing.B) {
				for b.Loop() {
					m := newManager(b, kind)
					wait := queue(b, m, n, txnlock.Exclusive, nil)
					require.NoError(b, m.UnlockAll(1))
					wait()
					require.NoError(b, m.Close())
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/waiter")
			})
		}
	}
}

// BenchmarkStatus: a Status snapshot of one key with n waiters (a third of
// them Exclusive), against its floor: building and sorting the same rows
// from a plain slice.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, kind := range []string{"point", "range"} {
			b.Run(fmt.Sprintf("%s/waiters=%d", kind, n), func(b *testing.B) {
				m := newManager(b, kind)
				modes := []txnlock.Mode{txnlock.Shared, txnlock.Shared, txnlock.Exclusive}
				ctx := context.Background()
				require.NoError(b, m.Lock(ctx, txnlock.Request{Txn: 1, Range: hot, Mode: txnlock.Exclusive}))
				var wg sync.WaitGroup
				for i := range n {
					// One at a time, so that the queue's order is known.
					wg.Go(func() {
						_ = m.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(i + 2), Range: hot, Mode: modes[i%3], Timeout: txnlock.WaitForever})
					})
					for m.Stats().Waiting < int64(i+1) {
						runtime.Gosched()
					}
				}
				for b.Loop() {
					if s := m.Status(); len(s.Waits) != n {
						b.Fatalf("%d waits", len(s.Waits))
					}
				}
				require.NoError(b, m.Close())
				wg.Wait()
			})
		}
		b.Run(fmt.Sprintf("floor/waiters=%d", n), func(b *testing.B) {
			// As many parked goroutines as the managers' waiters: the
			// garbage collector scans their stacks in both.
			park := make(chan struct{})
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { <-park })
			}
			defer wg.Wait()
			defer close(park)
			type row struct {
				txn  txnlock.TxnID
				mode txnlock.Mode
			}
			rows := make([]row, n)
			for i := range rows {
				rows[i] = row{txnlock.TxnID(i + 2), []txnlock.Mode{txnlock.Shared, txnlock.Shared, txnlock.Exclusive}[i%3]}
			}
			since := time.Now()
			for b.Loop() {
				var s txnlock.Status
				s.Locks = append(s.Locks, txnlock.LockStatus{Range: txnlock.Point([]byte("hot")), Mode: txnlock.Exclusive, Holders: []txnlock.TxnID{1}})
				blockers := make([]txnlock.TxnID, n)
				prev := txnlock.TxnID(1)
				for i, r := range rows {
					blockers[i] = prev
					s.Waits = append(s.Waits, txnlock.WaitStatus{Txn: r.txn, Range: hot, Mode: r.mode, Blockers: blockers[i : i+1 : i+1], Since: since})
					prev = r.txn
				}
				s.Sort()
			}
		})
	}
}

// BenchmarkUnlockUnderStatus: 2,000 waiters on one key are granted one by
// one, each unlocking as soon as it is granted, while another goroutine
// takes Status snapshots in a loop. It reports the p99 and the maximum of
// one Unlock call: a scrape must not stall the key.
func BenchmarkUnlockUnderStatus(b *testing.B) {
	const n = 2000
	for _, kind := range []string{"point", "range"} {
		b.Run(kind, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				m := newManager(b, kind)
				var mu sync.Mutex
				took := make([]time.Duration, 0, n)
				wait := queue(b, m, n, txnlock.Exclusive, func(txn txnlock.TxnID) {
					start := time.Now()
					if err := m.Unlock(txn, txnlock.DefaultColumnFamily, hot); err != nil {
						b.Error(err)
					}
					d := time.Since(start)
					mu.Lock()
					took = append(took, d)
					mu.Unlock()
				})
				stop := make(chan struct{})
				var scraper sync.WaitGroup
				scraper.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							m.Status()
						}
					}
				})
				require.NoError(b, m.UnlockAll(1))
				wait()
				close(stop)
				scraper.Wait()
				require.NoError(b, m.Close())
				lat = append(lat, took...)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-unlock-µs")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-unlock-µs")
		})
	}
}

// TestQueueDrains: the benchmarks' queue forms and drains in both
// managers, every waiter granted once (a lost wake-up hangs it).
func TestQueueDrains(t *testing.T) {
	for _, kind := range []string{"point", "range"} {
		t.Run(kind, func(t *testing.T) {
			m := newManager(t, kind)
			var granted atomic.Int64
			wait := queue(t, m, 300, txnlock.Exclusive, func(txnlock.TxnID) { granted.Add(1) })
			require.Len(t, m.Status().Waits, 300)
			require.NoError(t, m.UnlockAll(1))
			wait()
			require.EqualValues(t, 300, granted.Load())
			require.Empty(t, m.Status().Locks)
			require.NoError(t, m.Close())
		})
	}
}
