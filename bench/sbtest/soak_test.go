package sbtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"go.uber.org/goleak"
)

// Soak settings: soakEnv is the total duration (default soakDefault),
// soakDirEnv a directory to run on disk instead of in memory.
const (
	soakEnv    = "TXNLOCK_SOAK"
	soakDirEnv = "TXNLOCK_SOAK_DIR"
	// soakProfilesEnv names a directory for each phase's heap profile.
	soakProfilesEnv = "TXNLOCK_SOAK_PROFILES"
	soakDefault     = 4 * time.Second
	soakRows        = 30 // rows 1..soakRows of sbtest1 are the bank
)

// soakPhase is one lock kind and layout of the soak, on a fresh DB.
type soakPhase struct {
	lock   LockKind
	layout Layout
}

func (p soakPhase) String() string { return string(p.lock) + "/" + string(p.layout) }

var soakPhases = []soakPhase{
	{LockPoint, LayoutPerTable}, {LockRange, LayoutPerIndex},
	{LockPointSK, LayoutPerIndex}, {LockRange, LayoutPerTable},
}

// soakPhaseMax bounds a phase, so that a long soak runs every kind of
// phase more than once.
const soakPhaseMax = 3 * time.Minute

// TestSoak runs a mixed load for TXNLOCK_SOAK (default 4 s), in phases of
// an eighth of it (at most soakPhaseMax, at least 500 ms) that each open a
// fresh DB, in turn: point and range managers, per-table and per-index
// column families. Six workers run, on sbtest1, transfers of k between
// rows 1..30 (a third of them on the hot rows 1..3) and AUTO-INC inserts
// (mode 0: the table AUTO-INC lock) balanced by deletes of the inserted
// rows, and on sbtest2 every other sbtest statement; a tenth of the
// transactions run under a context that ends within 2 ms, and the lock
// timeout is 50 ms. After each phase: no lock and no waiter is left, the
// manager's counters show none held or waiting, the tables verify, sum(k)
// of sbtest1 is unchanged, and the goroutines are back to their number
// before the phase. It logs the live heap after runtime.GC() at the same
// points of every phase (heapLog); from 10 minutes on, the live heap after
// each phase's Close must be within 10% of the first phase's.
// TXNLOCK_SOAK_PROFILES=dir writes each phase's heap profiles there, at the
// end of its load and after its Close: go tool pprof -diff_base compares
// two phases.
func TestSoak(t *testing.T) {
	total := soakDefault
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "%s=%q", soakEnv, v)
		total = d
	}
	heap := &heapLog{profiles: os.Getenv(soakProfilesEnv)}
	if heap.profiles != "" {
		runtime.MemProfileRate = 4 << 10 // finer than the default 512 KiB: the live heap is a few MiB
	}
	phase := min(max(total/8, 500*time.Millisecond), soakPhaseMax)
	start := time.Now()
	var committed, failed int
	for i := 0; time.Since(start) < total; i++ {
		ph := soakPhases[i%len(soakPhases)]
		d := min(phase, total-time.Since(start))
		c, f := soakPhaseRun(t, ph, d, heap, start)
		committed += c
		failed += f
	}
	t.Logf("soak %v: %d transactions committed, %d rolled back after a lock error or a cancellation", total, committed, failed)
	heap.check(t, total)
}

func soakPhaseRun(t *testing.T, ph soakPhase, d time.Duration, heap *heapLog, start time.Time) (committed, failed int) {
	before := goleak.IgnoreCurrent()
	opts := Options{Tables: 2, TableSize: 200, Lock: ph.lock, Layout: ph.layout, LockTimeout: 50 * time.Millisecond,
		CacheSize: 4 << 20, MemTableSize: 4 << 20}
	if parent := os.Getenv(soakDirEnv); parent != "" {
		dir, err := os.MkdirTemp(parent, "soak")
		require.NoError(t, err)
		defer os.RemoveAll(dir)
		opts.Dir = dir
	}
	db, err := Open(opts)
	require.NoError(t, err)
	require.NoError(t, db.Prepare(bg))
	want, err := sumK(db)
	require.NoError(t, err)

	var mu sync.Mutex // guards pool, committed, failed
	var pool []int64  // inserted ids of sbtest1, for the deletes
	loadStart := time.Now()
	stop := loadStart.Add(d)
	errs := make(chan error, 6)
	var wg sync.WaitGroup
	for w := range 6 {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
		wg.Go(func() {
			for time.Now().Before(stop) {
				ok, err := soakTxn(db, rng, &mu, &pool)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if ok {
					committed++
				} else {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	// The live heap a quarter, half and three quarters into the load,
	// while the workers run.
	p := heapPhase{ph: ph}
	for i := range p.during {
		time.Sleep(time.Until(loadStart.Add(d * time.Duration(i+1) / 4)))
		p.during[i] = sampleHeap()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "%v", ph)
	}
	p.at, p.end = time.Since(start), sampleHeap()
	heap.writeProfile(t, len(heap.phases)+1, ph, "end")
	st := db.Manager().Status()
	require.Empty(t, st.Locks, "%v: locks left after every transaction ended", ph)
	require.Empty(t, st.Waits, "%v: waiters left", ph)
	stats := db.LockStats()
	require.Zero(t, stats.CurrentLocks, "%v", ph)
	require.Zero(t, stats.Waiting, "%v", ph)
	require.GreaterOrEqual(t, stats.Acquired, stats.Released, "%v", ph)
	verify(t, db)
	got, err := sumK(db)
	require.NoError(t, err)
	require.Equal(t, want, got, "%v: sum(k) of the bank changed", ph)
	require.NoError(t, db.Close())
	require.NoError(t, goleak.Find(before), "%v: goroutines left behind", ph)
	p.closed = sampleHeap()
	heap.writeProfile(t, len(heap.phases)+1, ph, "closed")
	heap.add(t, p)
	return committed, failed
}

// soakTxn runs one random transaction. ok is false when it was rolled back
// after an expected failure (lock timeout, deadlock, cancellation, a
// duplicate id); err is anything else.
func soakTxn(db *DB, rng *rand.Rand, mu *sync.Mutex, pool *[]int64) (ok bool, err error) {
	ctx := bg
	if rng.IntN(10) == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(bg, time.Duration(rng.IntN(2000))*time.Microsecond)
		defer cancel()
	}
	tx := db.Begin()
	var deleted int64 // an id taken from pool, returned on failure
	defer func() {
		if err == nil && !ok {
			_ = tx.Rollback()
			if deleted != 0 {
				mu.Lock()
				*pool = append(*pool, deleted)
				mu.Unlock()
			}
		}
	}()
	bankRow := func() int64 {
		if rng.IntN(3) == 0 {
			return 1 + rng.Int64N(3) // hot rows
		}
		return 1 + rng.Int64N(soakRows)
	}
	var inserted int64
	switch p := rng.IntN(20); {
	case p < 6: // transfer
		a, b := bankRow(), bankRow()
		if a == b {
			b = a%soakRows + 1
		}
		for _, id := range []int64{a, b} {
			if _, _, err = tx.SelectForUpdate(ctx, 1, id); err != nil {
				break
			}
		}
		if err == nil {
			_, err = tx.UpdateIndexBy(ctx, 1, a, -3)
		}
		if err == nil {
			_, err = tx.UpdateIndexBy(ctx, 1, b, 3)
		}
	case p < 9: // AUTO-INC insert, k = 0
		inserted, err = tx.InsertAuto(ctx, 1, 0, RandomC(rng), RandomPad(rng))
	case p < 12: // delete an inserted row
		mu.Lock()
		if n := len(*pool); n > 0 {
			i := rng.IntN(n)
			deleted = (*pool)[i]
			(*pool)[i] = (*pool)[n-1]
			*pool = (*pool)[:n-1]
		}
		mu.Unlock()
		if deleted != 0 {
			_, err = tx.Delete(ctx, 1, deleted)
		}
	default: // the other statements, on sbtest2
		id := 1 + rng.Int64N(200)
		switch rng.IntN(7) {
		case 0:
			_, _, err = tx.PointSelect(ctx, 2, id)
		case 1:
			_, err = tx.RangeSelect(ctx, 2, id, id+rng.Int64N(10), rng.IntN(2) == 0)
		case 2:
			_, _, err = tx.SelectForShare(ctx, 2, id)
		case 3:
			_, err = tx.UpdateIndex(ctx, 2, id)
		case 4:
			_, err = tx.UpdateNonIndex(ctx, 2, id, RandomC(rng))
		case 5:
			if _, err = tx.Delete(ctx, 2, id); err == nil {
				err = tx.Insert(ctx, 2, Row{ID: id, K: rng.Int64N(200), C: RandomC(rng), Pad: RandomPad(rng)})
			}
		case 6:
			_, err = tx.InsertAuto(ctx, 2, rng.Int64N(200), RandomC(rng), RandomPad(rng))
		}
	}
	if err == nil {
		err = tx.Commit()
		if err == nil {
			if inserted != 0 {
				mu.Lock()
				*pool = append(*pool, inserted)
				mu.Unlock()
			}
			return true, nil
		}
		deleted = 0 // Commit ended the transaction; a failed commit applied nothing
		if !soakExpected(err) {
			return false, err
		}
		return false, nil
	}
	if soakExpected(err) {
		return false, nil
	}
	_ = tx.Rollback()
	return false, err
}

// soakExpected reports whether err is a failure the soak provokes.
func soakExpected(err error) bool {
	return errors.Is(err, txnlock.ErrDeadlock) || errors.Is(err, txnlock.ErrLockTimeout) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrDuplicateKey)
}

// heapLog records the live heap, after runtime.GC(), at the same points
// of every phase: a quarter, half and three quarters into the load
// (logged only), at its end (the workers stopped, every transaction ended,
// the DB still open), and after Close. It logs beside each what the Go
// runtime holds from the OS and RSS, which also counts Pebble's block
// cache and memtables (allocated outside the Go heap) and what the C
// allocator keeps of them once freed: neither is checked.
type heapLog struct {
	mu     sync.Mutex
	phases []heapPhase
	// profiles, if set, is a directory where each phase's heap profiles
	// are written, at the end of its load and after its Close.
	profiles string
}

type heapPhase struct {
	ph     soakPhase
	at     time.Duration // since the soak began, at the end of the load
	during [3]heapSample // a quarter, half and three quarters into the load
	end    heapSample
	closed heapSample
}

type heapSample struct {
	live   uint64 // bytes
	goKiB  uint64 // what the Go runtime has mapped and not released to the OS
	rssKiB int64
}

// sampleHeap collects garbage and returns the live heap it left, with RSS.
// It collects twice: what sync.Pools hold survives one collection.
func sampleHeap() heapSample {
	runtime.GC()
	runtime.GC()
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return heapSample{live: m[0].Value.Uint64(), goKiB: (m[1].Value.Uint64() - m[2].Value.Uint64()) >> 10, rssKiB: rssKiB()}
}

func (s heapSample) String() string {
	return fmt.Sprintf("%d KiB (Go %d MiB, RSS %d MiB)", s.live>>10, s.goKiB>>10, s.rssKiB>>10)
}

func (l *heapLog) add(t *testing.T, p heapPhase) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phases = append(l.phases, p)
	t.Logf("phase %d %v at %v: live heap during %v, %v, %v; at the end %v; closed %v",
		len(l.phases), p.ph, p.at.Round(time.Second), p.during[0], p.during[1], p.during[2], p.end, p.closed)
}

// writeProfile writes the heap profile of phase n at a point (end, closed),
// if profiles are wanted.
func (l *heapLog) writeProfile(t *testing.T, n int, ph soakPhase, point string) {
	if l.profiles == "" {
		return
	}
	f, err := os.Create(filepath.Join(l.profiles, fmt.Sprintf("heap-%02d-%s-%s-%s.pprof", n, ph.lock, ph.layout, point)))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
}

// check holds, for soaks of 10 minutes or more, the live heap after each
// phase's Close within 10% of the first phase's: what a phase leaves
// behind grows it from phase to phase. The live heap while a DB is open is
// logged only: it holds the DB's state (memtables, the table cache and, in
// memory, the files), which differs from phase to phase.
func (l *heapLog) check(t *testing.T, total time.Duration) {
	if total < 10*time.Minute {
		return
	}
	c := l.phases[0].closed
	for i, p := range l.phases {
		require.InDelta(t, float64(c.live), float64(p.closed.live), 0.1*float64(c.live),
			"phase %d %v: live heap after Close %v, after the first phase's %v", i+1, p.ph, p.closed, c)
	}
}

// rssKiB reads VmRSS from /proc/self/status (0 where there is none).
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
