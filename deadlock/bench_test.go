package deadlock

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/pointlock"
)

// reportLatencies reports the p50 and p99 of lat.
func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkCycleToVictimError measures the time from the request that
// closes a 2-cycle (txn 2 asks for a, held by txn 1, which sleeps waiting
// for b, held by txn 2) to the victim's error. With the requester policy
// the closing request's own Lock returns it. With the fewest-locks policy
// the victim is the sleeping txn 1 (it holds fewer locks): its goroutine
// stamps the moment its Lock returns, then rolls back so that txn 2 gets a.
//
// The figures are p50-ns and p99-ns, from the clock around each closing
// request; ns/op is a whole round (set-up, cycle, roll-back). The timer is
// not stopped around the set-up: StopTimer and StartTimer read the memory
// statistics, which stops the world, and the scheduler's restart after it
// lands inside the next measured request.
func BenchmarkCycleToVictimError(b *testing.B) {
	for _, tc := range []struct {
		name   string
		victim Victim
	}{
		{"victim=requester", VictimRequester},
		{"victim=sleeper", VictimFewestLocks},
	} {
		b.Run(tc.name, func(b *testing.B) {
			det, err := New(Options{Victim: tc.victim})
			if err != nil {
				b.Fatal(err)
			}
			defer det.Close()
			m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			// parked hears that the sleeper's goroutine is about to sleep,
			// its wait reported and checked.
			var sleeper atomic.Uint64
			parked := make(chan struct{}, 1)
			defer lockwait.SetTestingParked(func(w *lockwait.Waiter, sleeps bool) {
				if sleeps && uint64(w.Txn()) == sleeper.Load() {
					parked <- struct{}{}
				}
			})()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t1, t2 := txnlock.TxnID(2*i+1), txnlock.TxnID(2*i+2)
				mustLock(b, m, t1, "a")
				mustLock(b, m, t2, "b")
				mustLock(b, m, t2, "c") // txn 2 holds more: txn 1 is the fewest-locks victim
				sleeper.Store(uint64(t1))
				slept := make(chan time.Time, 1)
				sleeperErr := make(chan error, 1)
				go func() {
					err := m.Lock(ctx, lockReq(t1, 0, "b", txnlock.Exclusive))
					slept <- time.Now()
					if err != nil {
						m.UnlockAll(t1)
					}
					sleeperErr <- err
				}()
				<-parked
				start := time.Now()
				err := m.Lock(ctx, lockReq(t2, 0, "a", txnlock.Exclusive))
				end := time.Now()
				if tc.victim == VictimRequester {
					if err == nil {
						b.Fatal("no deadlock")
					}
					lat = append(lat, end.Sub(start))
					m.UnlockAll(t2)
					if err := <-sleeperErr; err != nil {
						b.Fatal(err)
					}
					<-slept
				} else {
					if err != nil {
						b.Fatal(err)
					}
					at := <-slept
					if err := <-sleeperErr; err == nil {
						b.Fatal("no deadlock")
					}
					lat = append(lat, at.Sub(start))
					m.UnlockAll(t2)
				}
				m.UnlockAll(t1)
			}
			reportLatencies(b, lat)
		})
	}
}

func mustLock(b *testing.B, m *pointlock.Manager, txn txnlock.TxnID, key string) {
	if err := m.Lock(context.Background(), lockReq(txn, 0, key, txnlock.Exclusive)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHotKey: 1,000 goroutines take turns locking one key
// exclusively, so about 1,000 are queued at any time. The variants run side
// by side; compare their locks/s: off (no detector), seam-only (a detector
// with Detection Off: what the manager's side of the seam costs), on-block (the
// default) and background.
func BenchmarkHotKey(b *testing.B) {
	const goroutines = 1000
	for _, tc := range []struct {
		name string
		det  func() (*Detector, error)
	}{
		{"detect=off", func() (*Detector, error) { return nil, nil }},
		{"detect=seam-only", func() (*Detector, error) { return New(Options{Detection: Off}) }},
		{"detect=on-block", func() (*Detector, error) { return New(Options{}) }},
		{"detect=background", func() (*Detector, error) { return New(Options{Detection: Background}) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			det, err := tc.det()
			if err != nil {
				b.Fatal(err)
			}
			wo := txnlock.WaitOptions{LockTimeout: txnlock.WaitForever}
			if det != nil {
				wo.Detector = det
				defer det.Close()
			}
			m, err := pointlock.New(pointlock.Options{WaitOptions: wo})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			var left atomic.Int64
			left.Store(int64(b.N))
			var next atomic.Uint64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					ctx := context.Background()
					key := txnlock.Point([]byte("hot"))
					for left.Add(-1) >= 0 {
						txn := txnlock.TxnID(next.Add(1))
						if err := m.Lock(ctx, txnlock.Request{Txn: txn, Range: key, Mode: txnlock.Exclusive}); err != nil {
							panic(err)
						}
						if err := m.UnlockAll(txn); err != nil { // the transaction ends
							panic(err)
						}
					}
				}()
			}
			b.ResetTimer()
			t0 := time.Now()
			close(start)
			wg.Wait()
			el := time.Since(t0)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "locks/s")
			if det != nil {
				st := det.Stats()
				b.ReportMetric(float64(st.Trips), "trips")
				b.ReportMetric(float64(st.Deadlocks), "deadlocks")
			}
		})
	}
}

// BenchmarkLineTransfer measures the machine, not the detector: the time
// one cache line takes to pass from one processor to another, the unit a
// hot key's hand-off is made of (BenchmarkHotKey). Two goroutines, which
// spin and so hold a processor each, take turns to write one counter:
// ns/op is one turn, a line's trip one way. one-goroutine is the control:
// the same loads and stores where the line never leaves its processor.
// It needs GOMAXPROCS ≥ 2.
func BenchmarkLineTransfer(b *testing.B) {
	var line struct {
		_ [64]byte
		v atomic.Int64
		_ [64]byte
	}
	turn := func(from, n int64, step int64) {
		for i := from; i < n; i += step {
			for line.v.Load() != i {
			}
			line.v.Store(i + 1)
		}
	}
	b.Run("one-goroutine", func(b *testing.B) {
		line.v.Store(0)
		turn(0, int64(b.N), 1)
	})
	b.Run("two-goroutines", func(b *testing.B) {
		if runtime.GOMAXPROCS(0) < 2 {
			b.Skip("needs two processors")
		}
		line.v.Store(0)
		n := int64(b.N)
		done := make(chan struct{})
		go func() {
			defer close(done)
			turn(1, n, 2)
		}()
		turn(0, n, 2)
		<-done
	})
}

// BenchmarkCheckQueued measures one on-block Check whose search passes
// through a lock with N waiters queued: the requester, txn 2, waits for a
// lock held by the last queued waiter, whose lock q is held by txn 1,
// which runs. Every waiter of q answers Blockers with q's holder, as a
// manager does (the contraction), so the search asks the requester and
// the last waiter, and never walks the queue: the cost is the same for
// N=10 and N=10,000 (but for the registry slot it reads the last
// waiter's waits from, which holds about N/4096 waits). A trip would show
// in the trips metric.
func BenchmarkCheckQueued(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			d, err := newDetector(Options{}, false)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			var last *testWaiter
			for i := range n {
				last = newTestWaiter(txnlock.TxnID(100+i), 1)
				if d.block(last.edge()) {
					b.Fatal("txn 1 does not wait: no Check needed")
				}
			}
			w := newTestWaiter(2, last.txn)
			if !d.block(w.edge()) {
				b.Fatal("the last waiter waits: a Check is needed")
			}
			if got := d.Stats().Waits; got != n+1 {
				b.Fatalf("%d waits registered, want %d", got, n+1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := d.check(w, w.Txn()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := d.Stats()
			if st.Searches != uint64(b.N) || st.Deadlocks != 0 {
				b.Fatalf("%v", st)
			}
			b.ReportMetric(float64(st.Trips), "trips")
			b.ReportMetric(float64(st.Steps)/float64(st.Searches), "steps/search")
			b.ReportMetric(float64(w.asked.Load()+last.asked.Load())/float64(st.Searches), "asked/search")
		})
	}
}

// BenchmarkWaitLifecycle is the detector's share of one hand-off on a hot
// lock r with 1,000 waiters: the granted waiter's Unblock, and the Block of
// the next wait (a new transaction queued on r, here the granted waiter's
// recycled handle), and its Check if Block asks for one. r's holder is
// the transaction just granted.
//
// idle: the waiting transactions hold nothing that others wait for, and
// r's holder runs: Block says no Check. graph: r is also blocked by txn 2,
// an upgrade queued ahead, say, and txn 2 itself waits for a lock held by
// txn 3, which runs: every Block asks for a Check, and each search goes
// new waiter -> {holder, 2} -> 3.
func BenchmarkWaitLifecycle(b *testing.B) {
	for _, graph := range []bool{true, false} {
		name := "idle"
		if graph {
			name = "graph"
		}
		b.Run(name, func(b *testing.B) {
			d, err := newDetector(Options{}, false)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			blockers := []txnlock.TxnID{1}
			if graph {
				blockers = append(blockers, 2)
				d.block(newTestWaiter(2, 3).edge())
			}
			// Every waiter of r answers Blockers from this one slice:
			// r's blockers, live.
			ws := make([]*testWaiter, 1000)
			for i := range ws {
				ws[i] = newTestWaiter(txnlock.TxnID(10+i), blockers...)
				d.block(ws[i].edge())
			}
			next := txnlock.TxnID(10 + len(ws))
			var edge detect.Edge
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				w := ws[i%len(ws)]
				w.end() // granted
				d.unblock(w)
				blockers[0] = w.txn // the new holder of r
				// The next wait: a new transaction queued on r.
				w.txn, next = next, next+1
				w.ended.Store(false)
				edge.Waiter = w
				if d.block(edge) != graph {
					b.Fatal("Block's answer is not the variant's")
				}
				if graph {
					if err := d.check(w, w.Txn()); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			st := d.Stats()
			if want := len(ws) + len(blockers) - 1; st.Waits != want {
				b.Fatalf("%d waits, want %d", st.Waits, want)
			}
			if st.Deadlocks != 0 || st.Trips != 0 {
				b.Fatalf("%v", st)
			}
			if st.Searches > 0 {
				b.ReportMetric(float64(st.Steps)/float64(st.Searches), "steps/search")
			}
		})
	}
}

// BenchmarkHandoff is the detector's share of one hand-off on a hot lock
// r with 1,000 waiters, in the order a hot key runs it: r is granted to
// its oldest waiter, whose transaction becomes r's holder; the granter's
// goroutine queues its next transaction on r, and that wait's Block looks
// at the holder, whose wait has ended but is not Unblocked yet; then the
// granted waiter's goroutine runs and Unblocks. Each wait was queued
// behind r's holder and r was not granted since (Waiter.Regranted is
// false), so Block asks no waiter anything.
func BenchmarkHandoff(b *testing.B) {
	d, err := newDetector(Options{}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	holder := txnlock.TxnID(1)
	ws := make([]*testWaiter, 1000)
	for i := range ws {
		ws[i] = newTestWaiter(txnlock.TxnID(10 + i))
		ws[i].queued = []txnlock.TxnID{holder}
		d.block(ws[i].edge())
	}
	next := txnlock.TxnID(10 + len(ws))
	spare := newTestWaiter(0)
	spare.queued = []txnlock.TxnID{0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % len(ws)
		w := ws[k]
		w.end() // granted: its transaction holds r
		// The next wait: a new transaction queued on r behind w's.
		spare.txn, next = next, next+1
		spare.queued[0] = w.txn
		spare.ended.Store(false)
		if d.block(spare.edge()) {
			b.Fatal("r's holder does not wait: no Check needed")
		}
		d.unblock(w)
		ws[k], spare = spare, w
	}
	b.StopTimer()
	if st := d.Stats(); st.Waits != len(ws) || st.Searches != 0 {
		b.Fatalf("%v", st)
	}
}
