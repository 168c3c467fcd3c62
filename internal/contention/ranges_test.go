package contention

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

var stripes = flag.Int("contention.stripes", 0, "rangelock stripes (0: the default)")

var loadTime = flag.Duration("contention.time", 5*time.Second, "how long BenchmarkContendedRanges runs each manager")

var victim = flag.String("contention.victim", "requester", "BenchmarkContendedRanges' victim policy: requester, youngest or fewest-locks")

// warmUp is how long the load runs before steady-commits counts: the
// first commits come before the queues have filled.
const warmUp = 5 * time.Second

// BenchmarkContendedRanges: 2,000 transactions each lock 5 random small
// ranges (1–4 keys) out of 500 keys, Exclusive, with a 2 s lock timeout
// and a deadlock detector (victim policy: -contention.victim), and retry
// on deadlock or timeout, for -contention.time. The range manager locks
// each range as one request; the point manager locks the same keys one by
// one. It reports commits, deadlocks and timeouts per second, and the
// commits after the first warmUp (steady-commits: a victim policy that
// lets every transaction be chosen again and again can commit nothing once
// the queues have filled); of the timeouts, those of transactions that
// held nothing yet (first-request-timeouts: no other transaction waits for
// one unless it is queued behind it), and those of transactions that
// Status showed on a cycle of waits a moment before (cycleWatch), and of
// those the ones whose cycles had stood for half a second then: waits in
// cycles should end by detection, not by timeout; the other timeouts are
// waits behind long chains of waits. It also reports how long the cycles
// it broke had stood, from the wait that closed each (the newest of its
// members' waits, CycleEntry.Since) to its report (DeadlockError.Time):
// the median and the 99th percentile; and the shape of the graph of waits
// at cycleWatch's looks, as medians over the looks: the holders that run
// (hold locks and wait for nothing: only they can commit), the median
// length of the chains of waits, and the median age of the waits.
func BenchmarkContendedRanges(b *testing.B) {
	for _, kind := range []string{"point", "range"} {
		b.Run(kind, func(b *testing.B) {
			var sum loadCounts
			for b.Loop() {
				sum.add(contendedRanges(b, kind, 2000, *loadTime))
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(sum.commits)/secs, "commits/s")
			if steady := float64(b.N) * (*loadTime - warmUp).Seconds(); steady > 0 {
				b.ReportMetric(float64(sum.steadyCommits)/steady, "steady-commits/s")
			}
			b.ReportMetric(float64(sum.deadlocks)/secs, "deadlocks/s")
			b.ReportMetric(float64(sum.timeouts)/secs, "timeouts/s")
			b.ReportMetric(float64(sum.firstTimeouts)/secs, "first-request-timeouts/s")
			b.ReportMetric(float64(sum.cycleTimeouts)/secs, "cycle-timeouts/s")
			b.ReportMetric(float64(sum.standingTimeouts)/secs, "standing-cycle-timeouts/s")
			slices.Sort(sum.stood)
			if n := len(sum.stood); n > 0 {
				b.ReportMetric(float64(sum.stood[n/2].Microseconds())/1000, "cycle-stood-p50-ms")
				b.ReportMetric(float64(sum.stood[n*99/100].Microseconds())/1000, "cycle-stood-p99-ms")
			}
			if n := len(sum.shapes); n > 0 {
				med := func(f func(graphShape) float64) float64 {
					xs := make([]float64, n)
					for i, s := range sum.shapes {
						xs[i] = f(s)
					}
					slices.Sort(xs)
					return xs[n/2]
				}
				b.ReportMetric(med(func(s graphShape) float64 { return float64(s.running) }), "running-holders")
				b.ReportMetric(med(func(s graphShape) float64 { return float64(s.depth) }), "chain-depth-p50")
				b.ReportMetric(med(func(s graphShape) float64 { return float64(s.age.Microseconds()) / 1000 }), "wait-age-p50-ms")
			}
		})
	}
}

// loadCounts are what one run of the load ended with.
type loadCounts struct {
	commits, deadlocks, timeouts int64
	// steadyCommits are the commits after the first warmUp.
	steadyCommits int64
	// firstTimeouts are the timeouts of transactions that held nothing.
	firstTimeouts int64
	// cycleTimeouts are the timeouts of transactions on a cycle of waits
	// at cycleWatch's last look; standingTimeouts those of them whose
	// cycles had all stood for standing then.
	cycleTimeouts, standingTimeouts int64
	// stood is how long each cycle broken stood before its report.
	stood []time.Duration
	// shapes are cycleWatch's looks at the graph of waits.
	shapes []graphShape
}

// standing is how long a cycle stands before its timeouts count as
// standingTimeouts: on-block detection finds a cycle in microseconds,
// and a background pass within a second.
const standing = 500 * time.Millisecond

func (l *loadCounts) add(o loadCounts) {
	l.commits += o.commits
	l.steadyCommits += o.steadyCommits
	l.deadlocks += o.deadlocks
	l.timeouts += o.timeouts
	l.firstTimeouts += o.firstTimeouts
	l.cycleTimeouts += o.cycleTimeouts
	l.standingTimeouts += o.standingTimeouts
	l.stood = append(l.stood, o.stood...)
	l.shapes = append(l.shapes, o.shapes...)
}

// contendedRanges runs the load with the given number of clients for d.
func contendedRanges(tb testing.TB, kind string, clients int, d time.Duration) loadCounts {
	const keys = 500
	v, ok := map[string]deadlock.Victim{"requester": deadlock.VictimRequester, "youngest": deadlock.VictimYoungest,
		"fewest-locks": deadlock.VictimFewestLocks}[*victim]
	require.True(tb, ok, "-contention.victim %q: want requester, youngest or fewest-locks", *victim)
	det, err := deadlock.New(deadlock.Options{Victim: v})
	require.NoError(tb, err)
	wait := txnlock.WaitOptions{Detector: det, LockTimeout: 2 * time.Second}
	var m txnlock.Manager
	switch kind {
	case "point":
		m, err = pointlock.New(pointlock.Options{WaitOptions: wait})
	case "range":
		m, err = rangelock.New(rangelock.Options{WaitOptions: wait, Stripes: *stripes})
	}
	require.NoError(tb, err)
	key := func(i int) []byte { return fmt.Appendf(nil, "%04d", i) }
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var nextTxn atomic.Uint64
	var c, sc, dl, to, fto, cto, sto atomic.Int64
	steadyFrom := time.Now().Add(warmUp)
	var stoodMu sync.Mutex
	var stood []time.Duration
	watch, watched := watchCycles(ctx, m, 250*time.Millisecond)
	// Every client starts at once: started one by one, the first would
	// commit alone while the rest are still being started.
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			<-start
			for ctx.Err() == nil {
				txn := txnlock.TxnID(nextTxn.Add(1))
				var err error
				first := true // txn holds nothing yet
				for range 5 {
					lo, n := rng.IntN(keys-3), 1+rng.IntN(4)
					if kind == "range" {
						r, _ := txnlock.NewRange(txnlock.Point(key(lo)).Start(), txnlock.Point(key(lo+n-1)).End())
						err = m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: txnlock.Exclusive})
						first = first && err != nil
					} else {
						for k := lo; k < lo+n && err == nil; k++ {
							err = m.Lock(ctx, txnlock.Request{Txn: txn, Range: txnlock.Point(key(k)), Mode: txnlock.Exclusive})
							first = first && err != nil
						}
					}
					if err != nil {
						break
					}
				}
				switch {
				case err == nil:
					c.Add(1)
					if time.Now().After(steadyFrom) {
						sc.Add(1)
					}
				case errors.Is(err, txnlock.ErrDeadlock):
					dl.Add(1)
					if d := standFor(err); d >= 0 {
						stoodMu.Lock()
						stood = append(stood, d)
						stoodMu.Unlock()
					}
				case errors.Is(err, txnlock.ErrLockTimeout):
					to.Add(1)
					if first {
						fto.Add(1)
					}
					if stood, ok := watch.onCycle(txn); ok {
						cto.Add(1)
						if stood >= standing {
							sto.Add(1)
						}
					}
				}
				if err := m.UnlockAll(txn); err != nil {
					tb.Error(err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	watched()
	if testing.Verbose() {
		tb.Logf("%s: %v\n%v", kind, m.Stats(), det.Stats())
	}
	require.NoError(tb, m.Close())
	require.NoError(tb, det.Close())
	return loadCounts{commits: c.Load(), steadyCommits: sc.Load(), deadlocks: dl.Load(), timeouts: to.Load(), firstTimeouts: fto.Load(),
		cycleTimeouts: cto.Load(), standingTimeouts: sto.Load(), stood: stood, shapes: watch.shapes()}
}

// standFor is how long the cycle of deadlock error err stood before it was
// reported: from the newest of its members' waits to the report; -1 if
// err carries no cycle.
func standFor(err error) time.Duration {
	var de *txnlock.DeadlockError
	if !errors.As(err, &de) || len(de.Cycle) == 0 {
		return -1
	}
	var newest time.Time
	for _, e := range de.Cycle {
		if e.Since.After(newest) {
			newest = e.Since
		}
	}
	return max(de.Time.Sub(newest), 0)
}

// TestContendedRangesRuns: a short run of the load, with a tenth of the
// benchmark's clients (so that it commits within the run however slow
// the machine), commits in both managers, and every goroutine ends
// (TestMain checks for leaks).
func TestContendedRangesRuns(t *testing.T) {
	for _, kind := range []string{"point", "range"} {
		t.Run(kind, func(t *testing.T) {
			require.Positive(t, contendedRanges(t, kind, 200, 300*time.Millisecond).commits)
		})
	}
}
