package pointlock

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txnlock/txnlock"
)

// Benchmarks of the Performance section. Commands (quote ratios from
// one run, medians over -count 10 with benchstat):
//
//	go test ./pointlock -run '^$' -bench 'Uncontended|Relock|Memory' -count 10
//	go test ./pointlock -run '^$' -bench 'ParallelDisjoint|HotKey|HandoffFloor' -cpu 2 -count 10

// benchKeys returns n distinct 16-byte keys and their point ranges.
func benchKeys(n int, salt uint64) ([][]byte, []txnlock.Range) {
	keys := make([][]byte, n)
	ranges := make([]txnlock.Range, n)
	for i := range keys {
		k := make([]byte, 16)
		binary.BigEndian.PutUint64(k, salt)
		binary.BigEndian.PutUint64(k[8:], uint64(i)*0x9e3779b97f4a7c15)
		keys[i], ranges[i] = k, txnlock.Point(k)
	}
	return keys, ranges
}

func newBenchManager(b *testing.B) *Manager {
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkUncontended locks a fresh key and releases it, on one goroutine:
// the manager against the floor, a global mutex around a map doing the same
// insert and delete. Target: manager ≤ 1.5 × floor.
func BenchmarkUncontended(b *testing.B) {
	const n = 1 << 16
	keys, ranges := benchKeys(n, 1)
	b.Run("manager", func(b *testing.B) {
		m := newBenchManager(b)
		ctx := context.Background()
		req := txnlock.Request{Txn: 1, Mode: txnlock.Exclusive}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req.Range = ranges[i&(n-1)]
			if err := m.Lock(ctx, req); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(1, 0, req.Range); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		f := newFloor()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			f.lockUnlock(keys[i&(n-1)])
		}
	})
	// interleaved runs both in alternating chunks of 4096 operations and
	// reports the fastest chunk of each and their ratio: on a shared
	// machine the minimum filters out the chunks other processes slowed.
	b.Run("interleaved", func(b *testing.B) {
		m := newBenchManager(b)
		f := newFloor()
		ctx := context.Background()
		req := txnlock.Request{Txn: 1, Mode: txnlock.Exclusive}
		const chunk = 4096
		best := [2]time.Duration{time.Hour, time.Hour}
		b.ResetTimer()
		for done := 0; done < b.N; done += 2 * chunk {
			t0 := time.Now()
			for i := 0; i < chunk; i++ {
				req.Range = ranges[(done+i)&(n-1)]
				if err := m.Lock(ctx, req); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(1, 0, req.Range); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for i := 0; i < chunk; i++ {
				f.lockUnlock(keys[(done+i)&(n-1)])
			}
			t2 := time.Now()
			best[0] = min(best[0], t1.Sub(t0))
			best[1] = min(best[1], t2.Sub(t1))
		}
		b.ReportMetric(float64(best[0].Nanoseconds())/chunk, "manager-ns")
		b.ReportMetric(float64(best[1].Nanoseconds())/chunk, "floor-ns")
		b.ReportMetric(float64(best[0])/float64(best[1]), "manager/floor")
	})
}

// floor is the baseline of BenchmarkUncontended: one global mutex around a
// map, doing the insert (if absent) and the delete a lock manager does.
type floor struct {
	mu    sync.Mutex
	table map[string]floorInfo
}

type floorInfo struct {
	txn  txnlock.TxnID
	mode txnlock.Mode
}

func newFloor() *floor { return &floor{table: map[string]floorInfo{}} }

func (f *floor) lockUnlock(k []byte) {
	f.mu.Lock()
	if _, ok := f.table[string(k)]; !ok {
		f.table[string(k)] = floorInfo{1, txnlock.Exclusive}
	}
	f.mu.Unlock()
	f.mu.Lock()
	delete(f.table, string(k))
	f.mu.Unlock()
}

// BenchmarkRelock re-locks a key the transaction holds. Target: 0 allocs/op.
func BenchmarkRelock(b *testing.B) {
	m := newBenchManager(b)
	ctx := context.Background()
	_, ranges := benchKeys(1, 2)
	for _, mode := range []txnlock.Mode{txnlock.Shared, txnlock.Exclusive} {
		b.Run(mode.String(), func(b *testing.B) {
			req := txnlock.Request{Txn: 1, Range: ranges[0], Mode: mode}
			if err := m.Lock(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.Lock(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			m.UnlockAll(1)
		})
	}
}

var benchGoroutines = []int{2, 16, 128, 1024}

// parallelism is the SetParallelism argument that runs n goroutines.
func parallelism(n int) int { return max(1, n/runtime.GOMAXPROCS(0)) }

// BenchmarkParallelDisjoint locks and releases keys that no other goroutine
// uses, from 2 to 1024 goroutines (run with -cpu 2). Target: ops/s at 128
// goroutines ≥ 90% of ops/s at 2.
//
// Each goroutine cycles through 256 keys of its own, written in place into
// one 16-byte buffer (as rangelock's benchmark of the same name does): a
// prebuilt array of keys per goroutine would make the benchmark's own
// working set grow with the goroutines (2.6 MB of keys and ranges at 128,
// past the L2 cache) and measure that instead of the manager.
func BenchmarkParallelDisjoint(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			m := newBenchManager(b)
			var next atomic.Uint64
			const perG = 256
			b.SetParallelism(parallelism(g))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				id := next.Add(1)
				var key [16]byte
				binary.BigEndian.PutUint64(key[:8], id)
				txn := txnlock.TxnID(id)
				ctx := context.Background()
				req := txnlock.Request{Txn: txn, Mode: txnlock.Exclusive}
				for i := uint64(0); pb.Next(); i++ {
					binary.BigEndian.PutUint64(key[8:], (i&(perG-1))*0x9e3779b97f4a7c15)
					req.Range = txnlock.Point(key[:])
					if err := m.Lock(ctx, req); err != nil {
						b.Error(err)
						return
					}
					if err := m.Unlock(txn, 0, req.Range); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
		})
	}
}

// BenchmarkHotKey has every goroutine lock one key Exclusive and release it
// at once (run with -cpu 2). The holder stamps, inside its critical section,
// when it got the lock and when it lets go, so the hand-off time — from one
// holder's release to the next holder's return from Lock — is measured
// exactly. It reports ops/s, the median hand-off, the median and p99 wait
// of a Lock call, and p99-wait/(goroutines × median hand-off), the fair
// share FIFO promises, and the hand-off's p99, p99.9 and maximum (a wait
// spans goroutines hand-offs, so one slow hand-off in a thousand shows in
// the p99 wait at 16 goroutines). Targets: ops/s at 1024 ≥ 50% of ops/s at 2;
// p99-per-fair-share ≤ 2. Because a time tail on a shared machine is mostly
// the holder's thread being descheduled, it also reports fairness counted in
// grants: p99-passed-per-goroutine < 1 means FIFO held for 99% of the
// requests (the maximum also counts the grants a goroutine missed while it
// was descheduled between reading the count and queueing, so it can exceed
// 1 without any overtaking). BenchmarkHandoffFloor measures the same time
// metrics with no manager, for scale.
func BenchmarkHotKey(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			opts := Options{}
			opts.LockTimeout = txnlock.WaitForever
			m, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			r := txnlock.Point([]byte("hot-key-16bytes!"))
			// Indexed by grant number and written only by the lock holder:
			// the lock orders the writes. All allocated here, so that
			// the measured loop allocates nothing and the garbage
			// collector, which stops a thousand goroutines, stays away.
			acq := make([]int64, b.N)
			rel := make([]int64, b.N)
			waits := make([]time.Duration, b.N)
			passed := make([]int64, b.N)
			epoch := time.Now()
			var next atomic.Uint64
			// grants counts acquisitions (written by the holder). A Lock
			// call that saw n grants when it started and is grant number
			// n+k was passed by k-1 others: with FIFO, at most g-1.
			var grants atomic.Int64
			b.SetParallelism(parallelism(g))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				txn := txnlock.TxnID(next.Add(1))
				ctx := context.Background()
				req := txnlock.Request{Txn: txn, Range: r, Mode: txnlock.Exclusive}
				for pb.Next() {
					n0 := grants.Load()
					t0 := time.Now()
					if err := m.Lock(ctx, req); err != nil {
						b.Error(err)
						return
					}
					t1 := time.Now()
					i := grants.Add(1) - 1
					passed[i] = i - n0
					waits[i] = t1.Sub(t0)
					acq[i] = int64(t1.Sub(epoch))
					rel[i] = int64(time.Since(epoch))
					if err := m.Unlock(txn, 0, r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			reportHandoffs(b, g, elapsed, acq, rel, waits)
			if len(passed) < 2 {
				return
			}
			// Fairness independent of time (and of a busy machine's
			// stalls): how many grants a Lock call waited through, per
			// goroutine; FIFO keeps the maximum below 1.
			slices.Sort(passed)
			b.ReportMetric(float64(passed[len(passed)*99/100])/float64(g), "p99-passed-per-goroutine")
			b.ReportMetric(float64(passed[len(passed)-1])/float64(g), "max-passed-per-goroutine")
		})
	}
}

// reportHandoffs reports the hand-off and wait metrics of BenchmarkHotKey
// and BenchmarkHandoffFloor: acq[i] and rel[i] are when grant i was
// received and let go (ns since an epoch), waits[i] how long its wait
// lasted. It sorts waits.
func reportHandoffs(b *testing.B, g int, elapsed time.Duration, acq, rel []int64, waits []time.Duration) {
	if len(waits) < 2 {
		return
	}
	handoffs := make([]int64, 0, len(acq))
	for i := 1; i < len(acq); i++ {
		handoffs = append(handoffs, acq[i]-rel[i-1])
	}
	slices.Sort(handoffs)
	slices.Sort(waits)
	handoff := float64(handoffs[len(handoffs)/2])
	p99 := float64(waits[len(waits)*99/100].Nanoseconds())
	b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(handoff, "handoff-p50-ns")
	b.ReportMetric(float64(handoffs[len(handoffs)*99/100]), "handoff-p99-ns")
	b.ReportMetric(float64(handoffs[len(handoffs)*999/1000]), "handoff-p999-ns")
	b.ReportMetric(float64(handoffs[len(handoffs)-1]), "handoff-max-ns")
	b.ReportMetric(float64(waits[len(waits)/2].Nanoseconds()), "wait-p50-ns")
	b.ReportMetric(p99, "wait-p99-ns")
	b.ReportMetric(p99/(float64(g)*handoff), "p99-per-fair-share")
}

// BenchmarkHandoffFloor is the platform's floor for BenchmarkHotKey's
// time metrics: g goroutines pass a token around a ring, each through the
// next one's channel, so the order is FIFO by construction and a hand-off
// is one targeted wake-up, with no lock manager at all. A goroutine's wait
// runs from passing the token on to receiving it again (g-1 hand-offs), as
// a Lock call's runs from the Unlock before it to its grant. If the floor's
// p99-per-fair-share is above 2 as well, the hot key's is set by how this
// machine wakes parked goroutines, not by the manager's queue.
func BenchmarkHandoffFloor(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			ring := make([]chan struct{}, g)
			for i := range ring {
				ring[i] = make(chan struct{}, 1)
			}
			acq := make([]int64, b.N)
			rel := make([]int64, b.N)
			waits := make([]time.Duration, b.N)
			epoch := time.Now()
			// grants is written by the token's holder only: receiving
			// the token orders the accesses, as the lock does in
			// BenchmarkHotKey.
			grants := 0
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					next := ring[(i+1)%g]
					t0 := time.Now()
					for range ring[i] {
						if grants == b.N { // done: pass it on so the others stop
							next <- struct{}{}
							return
						}
						t1 := time.Now()
						n := grants
						grants++
						waits[n] = t1.Sub(t0)
						acq[n] = int64(t1.Sub(epoch))
						rel[n] = int64(time.Since(epoch))
						t0 = time.Now()
						next <- struct{}{}
					}
				}()
			}
			ring[0] <- struct{}{}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			reportHandoffs(b, g, elapsed, acq, rel, waits)
		})
	}
}

// BenchmarkMemoryPerLock holds 100,000 locks on 16-byte keys and reports the
// heap in use per lock (after GC, bookkeeping of transactions included).
// Target: ≤ 128 bytes/lock. The keys themselves, built by the caller, are
// not counted; the manager's copies are.
func BenchmarkMemoryPerLock(b *testing.B) {
	const n = 100_000
	for _, txns := range []int{1, 1000} {
		b.Run(fmt.Sprintf("txns=%d", txns), func(b *testing.B) {
			_, ranges := benchKeys(n, 3)
			ctx := context.Background()
			var perLock float64
			for i := 0; i < b.N; i++ {
				before := heapInUse()
				m, err := New(Options{})
				if err != nil {
					b.Fatal(err)
				}
				for j, r := range ranges {
					req := txnlock.Request{Txn: txnlock.TxnID(1 + j%txns), Range: r, Mode: txnlock.Exclusive}
					if err := m.Lock(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				after := heapInUse()
				perLock = float64(after-before) / n
				runtime.KeepAlive(m)
				m.Close()
			}
			b.ReportMetric(perLock, "bytes/lock")
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
