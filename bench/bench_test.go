package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// benchThreads is the thread ramp of MyRocks' published comparison.
var benchThreads = []int{1, 2, 4, 8, 16, 32, 64, 100}

// benchWorkload runs b.N transactions of w over N threads on a fresh
// in-memory table per sub-benchmark, for each lock kind, so that benchstat
// compares lock=point against lock=range at each thread count:
//
//	go test ./bench -run '^$' -bench 'OLTPWriteOnly' -count 10 | tee /tmp/wo.txt
//	benchstat -col /lock /tmp/wo.txt
//
// ns/op is per transaction (wall time, all threads together); qps counts
// BEGIN and COMMIT as sysbench does. lock=none is the storage and driver
// alone; driver=noop (BenchmarkDriverOverhead) is the driver alone.
func benchWorkload(b *testing.B, w Workload, locks ...LockKind) {
	for _, lock := range locks {
		for _, threads := range benchThreads {
			b.Run(fmt.Sprintf("lock=%s/threads=%d", lock, threads), func(b *testing.B) {
				runBench(b, OpenSBTest, w, lock, threads, false)
			})
		}
	}
}

func runBench(b *testing.B, open Opener, w Workload, lock LockKind, threads int, timeLocks bool) {
	ctx := context.Background()
	db, err := open(ctx, TableConfig{
		Tables: 1, TableSize: DefaultTableSize, Layout: LayoutShared, Storage: StorageMem,
		Lock: lock, AutoIncMode: 1, LockTimeout: DefaultLockTimeout, TimeLocks: timeLocks,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	r, err := runOn(ctx, db, RunSpec{
		Workload: w, Threads: threads, Events: int64(b.N), Seed: 1,
		Table: TableConfig{Tables: 1, TableSize: DefaultTableSize, Lock: lock},
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.QPS(), "qps")
	b.ReportMetric(r.LocksPerTxn(), "locks/txn")
	if timeLocks {
		b.ReportMetric(float64(r.LockTimePerTxn()), "lock-ns/txn")
	}
	if r.Errors() > 0 {
		b.ReportMetric(float64(r.Errors())/float64(b.N), "errors/op")
	}
}

// BenchmarkOLTPWriteOnly: sysbench oltp_write_only, lockbench's main comparison.
// lock=point-sk sends range's requests to the point manager: against
// lock=range it compares the managers on equal requests.
func BenchmarkOLTPWriteOnly(b *testing.B) {
	benchWorkload(b, OLTPWriteOnly, LockPoint, LockRange, LockPointSK, LockNone)
}

// BenchmarkOLTPUpdateNonIndex: one UPDATE c per transaction, one lock.
func BenchmarkOLTPUpdateNonIndex(b *testing.B) {
	benchWorkload(b, OLTPUpdateNonIndex, LockPoint, LockRange, LockNone)
}

// BenchmarkDriverOverhead: the driver's own cost per transaction, against
// a table that does nothing.
func BenchmarkDriverOverhead(b *testing.B) {
	for _, w := range []Workload{OLTPWriteOnly, OLTPUpdateNonIndex} {
		b.Run(string(w), func(b *testing.B) { runBench(b, OpenNoop, w, LockNone, 1, false) })
	}
}

// BenchmarkLockTime: oltp_write_only at 1 thread with the lock calls
// timed (lock-ns/txn). lock=point-sk sends the point manager 4 more
// requests per transaction than lock=point, so (lock-ns/txn of point-sk -
// of point) / 4 - clock-ns/call is the cost of one more lock request in
// place, among Pebble's work; clock-ns/call is what the timing itself
// adds to a call (an empty call timed the same way, measured in the same
// run):
//
//	go test -c -o /tmp/bench.test ./bench && cd bench
//	python3 ../tools/benchpairs.py 8 . 'LockTime' 20000x cur=/tmp/bench.test -- \
//	  "(b['lock=point-sk:lock-ns/txn']-b['lock=point:lock-ns/txn'])/4-b['lock=point:clock-ns/call']"
func BenchmarkLockTime(b *testing.B) {
	for _, lock := range []LockKind{LockPoint, LockPointSK, LockRange} {
		b.Run(fmt.Sprintf("lock=%s", lock), func(b *testing.B) {
			runBench(b, OpenSBTest, OLTPWriteOnly, lock, 1, true)
			b.ReportMetric(float64(timedNothing()), "clock-ns/call")
		})
	}
}

// timedNothing is the time sbtest's timing of a lock call reports for a
// call that does nothing (the median of 9 rounds of 10,000).
func timedNothing() time.Duration {
	var rounds [9]time.Duration
	for i := range rounds {
		var sum time.Duration
		for range 10_000 {
			t0 := time.Now()
			sum += time.Since(t0)
		}
		rounds[i] = sum / 10_000
	}
	slices.Sort(rounds[:])
	return rounds[len(rounds)/2]
}
