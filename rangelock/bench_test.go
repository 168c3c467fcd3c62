package rangelock

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
)

// Benchmarks of the range manager against the point manager. Ratios are
// quoted from runs with both sides in them; BENCHMARKS.md has the commands
// and figures.

func newBenchManagers(b *testing.B) map[string]txnlock.Manager {
	rm, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	pm, err := pointlock.New(pointlock.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rm.Close(); pm.Close() })
	return map[string]txnlock.Manager{"range": rm, "point": pm}
}

// key16 writes a 16-byte key made of prefix and n into buf.
func key16(buf []byte, prefix, n uint64) []byte {
	binary.BigEndian.PutUint64(buf[:8], prefix)
	binary.BigEndian.PutUint64(buf[8:16], n)
	return buf[:16]
}

// BenchmarkUncontended: one transaction locks a fresh key ([k, k],
// Exclusive) and releases it. Target: range ≤ 1.3 × point.
func BenchmarkUncontended(b *testing.B) {
	mgrs := newBenchManagers(b)
	for _, name := range []string{"range", "point"} {
		mgr := mgrs[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var buf [16]byte
			req := txnlock.Request{Txn: 1, Mode: txnlock.Exclusive}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req.Range = txnlock.Point(key16(buf[:], 1, uint64(i)))
				if err := mgr.Lock(ctx, req); err != nil {
					b.Fatal(err)
				}
				if err := mgr.Unlock(1, 0, req.Range); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParallelDisjoint: goroutines lock fresh keys of their own, all
// in one column family, and release them eight at a time with UnlockAll
// (short transactions). Run with -cpu 2: g=128 is 128 goroutines, g=2 two.
// Targets: range ≥ 0.9 × point at g=128, and range at g=128 ≥ 85% of
// range at g=2.
func BenchmarkParallelDisjoint(b *testing.B) {
	mgrs := newBenchManagers(b)
	for _, g := range []int{2, 128} {
		for _, name := range []string{"range", "point"} {
			mgr := mgrs[name]
			b.Run(fmt.Sprintf("g=%d/%s", g, name), func(b *testing.B) {
				procs := runtime.GOMAXPROCS(0)
				b.SetParallelism(max(1, g/procs))
				var nextTxn atomic.Uint64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					id := nextTxn.Add(1)
					txn := txnlock.TxnID(id<<32 | 1)
					var buf [16]byte
					req := txnlock.Request{Txn: txn, Mode: txnlock.Exclusive}
					for i := uint64(0); pb.Next(); i++ {
						req.Range = txnlock.Point(key16(buf[:], id, i))
						if err := mgr.Lock(ctx, req); err != nil {
							b.Error(err)
							return
						}
						if i%8 == 7 {
							if err := mgr.UnlockAll(req.Txn); err != nil {
								b.Error(err)
								return
							}
							txn++
							req.Txn = txn
						}
					}
					_ = mgr.UnlockAll(req.Txn)
				})
			})
		}
	}
}

// BenchmarkConflictCheck10k: 10,000 ranges of 1,000 transactions are held;
// a NoWait request for a range that overlaps one of them fails. The
// brute-force sub-benchmark scans a list of the same ranges, for scale.
func BenchmarkConflictCheck10k(b *testing.B) {
	const n = 10000
	rm, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rm.Close()
	ctx := context.Background()
	var ranges []txnlock.Range
	for i := range n {
		start := fmt.Appendf(nil, "key%08d", 2*i)
		end := fmt.Appendf(nil, "key%08d", 2*i+1)
		r, _ := txnlock.Inclusive(start, end)
		ranges = append(ranges, r)
		if err := rm.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(1 + i%1000), Range: r, Mode: txnlock.Exclusive}); err != nil {
			b.Fatal(err)
		}
	}
	probe := func(i int) txnlock.Range { return txnlock.Point(fmt.Appendf(nil, "key%08d", (2*i+1)%(2*n))) }
	b.Run("rangelock", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			err := rm.Lock(ctx, txnlock.Request{Txn: 5000, Range: probe(i), Mode: txnlock.Shared, Timeout: txnlock.NoWait})
			if err == nil {
				b.Fatal("no conflict")
			}
		}
	})
	b.Run("brute-force", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			p := probe(i)
			found := false
			for _, r := range ranges {
				if r.Overlaps(p) {
					found = true
				}
			}
			if !found {
				b.Fatal("no conflict")
			}
		}
	})
}

// BenchmarkMemoryPerRange: heap in use after GC for 100,000 held point
// ranges with 16-byte keys (1,000 transactions of 100 keys; the
// transaction table included), against the manager's own accounting.
// Targets: ≤ 160 bytes per range; accounting within 25% of measured.
func BenchmarkMemoryPerRange(b *testing.B) {
	const n = 100000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rm, err := New(Options{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var buf [16]byte
		for i := range n {
			k := key16(buf[:], uint64(i%1000), uint64(i))
			if err := rm.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(1 + i/100), Range: txnlock.Point(k), Mode: txnlock.Exclusive}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		measured := float64(after.HeapInuse-before.HeapInuse) / n
		accounted := float64(rm.Stats().LockMemory) / n
		b.ReportMetric(measured, "heap-B/range")
		b.ReportMetric(accounted, "accounted-B/range")
		b.ReportMetric(accounted/measured, "accounted/heap")
		runtime.KeepAlive(rm)
		rm.Close()
	}
}

// BenchmarkLoaded100k: BenchmarkUncontended with 100,000 point locks of
// 1,000 other transactions already held (about 3,000 per stripe), where an
// ordered index costs O(log n) and a hash table O(1).
func BenchmarkLoaded100k(b *testing.B) {
	mgrs := newBenchManagers(b)
	for _, name := range []string{"range", "point"} {
		mgr := mgrs[name]
		ctx := context.Background()
		var buf [16]byte
		for i := range 100000 {
			k := key16(buf[:], 7, uint64(i))
			if err := mgr.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(100 + i/100), Range: txnlock.Point(k), Mode: txnlock.Exclusive}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			req := txnlock.Request{Txn: 1, Mode: txnlock.Exclusive}
			for i := 0; b.Loop(); i++ {
				req.Range = txnlock.Point(key16(buf[:], 1, uint64(i)))
				if err := mgr.Lock(ctx, req); err != nil {
					b.Fatal(err)
				}
				if err := mgr.Unlock(1, 0, req.Range); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWideWaiterBlockers: what one step of a deadlock search costs
// the manager on contended small ranges: the detector's Blockers of a
// wide waiter, one of 2,000 queued on ranges of 1–4 keys out of 500, each
// key held by another transaction. kept: the answer kept from the last
// question (nothing changed since); walk: the walk that makes it.
func BenchmarkWideWaiterBlockers(b *testing.B) {
	const keys, waiters = 500, 2000
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	key := func(i int) []byte { return fmt.Appendf(nil, "%04d", i) }
	for i := range keys {
		req := txnlock.Request{Txn: txnlock.TxnID(1 + i), Range: txnlock.Point(key(i)), Mode: txnlock.Exclusive}
		if err := m.Lock(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	done := make(chan error, waiters)
	for i := range waiters {
		lo, n := (i*7919)%(keys-3), 1+i%4
		r, _ := txnlock.NewRange(txnlock.Point(key(lo)).Start(), txnlock.Point(key(lo+n-1)).End())
		go func() {
			done <- m.Lock(ctx, txnlock.Request{Txn: txnlock.TxnID(keys + 1 + i), Range: r, Mode: txnlock.Exclusive})
		}()
	}
	for m.Stats().Waiting < waiters {
		runtime.Gosched()
	}
	f := m.sh.Fams.Get(0)
	f.lockStripes()
	var ws []*waiter
	for lw := f.wide.Front(); lw != nil; lw = lw.Next() {
		ws = append(ws, waiterOf(lw))
	}
	f.unlockStripes()
	var dst []txnlock.TxnID
	b.Run("kept", func(b *testing.B) {
		edges := 0
		for i := 0; b.Loop(); i++ {
			w := ws[i%len(ws)]
			dst, _ = f.src.Blockers(w.lw, dst[:0])
			edges += len(dst)
		}
		b.ReportMetric(float64(edges)/float64(b.N), "edges/op")
	})
	b.Run("walk", func(b *testing.B) {
		edges := 0
		for i := 0; b.Loop(); i++ {
			w := ws[i%len(ws)]
			f.lockStripes()
			dst = f.nearestBlockersLocked(&w.request, w.seq, dst[:0])
			f.unlockStripes()
			edges += len(dst)
		}
		b.ReportMetric(float64(edges)/float64(b.N), "edges/op")
	})
	cancel()
	for range waiters {
		<-done
	}
	m.Close()
}
