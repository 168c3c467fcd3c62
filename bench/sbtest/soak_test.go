package sbtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
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
	soakEnv     = "TXNLOCK_SOAK"
	soakDirEnv  = "TXNLOCK_SOAK_DIR"
	soakDefault = 4 * time.Second
	soakRows    = 30 // rows 1..soakRows of sbtest1 are the bank
)

// soakPhase is one lock kind and layout of the soak, on a fresh DB.
type soakPhase struct {
	lock   LockKind
	layout Layout
}

var soakPhases = []soakPhase{
	{LockPoint, LayoutPerTable}, {LockRange, LayoutPerIndex},
	{LockPointSK, LayoutPerIndex}, {LockRange, LayoutPerTable},
}

// TestSoak runs a mixed load for TXNLOCK_SOAK (default 4 s), in four
// phases that each open a fresh DB: point and range managers, per-table and
// per-index column families. Six workers run, on sbtest1, transfers of k
// between rows 1..30 (a third of them on the hot rows 1..3) and AUTO-INC
// inserts (mode 0: the table AUTO-INC lock) balanced by deletes of the
// inserted rows, and on sbtest2 every other sbtest statement; a tenth of
// the transactions run under a context that ends within 2 ms, and the lock
// timeout is 50 ms. After each phase: no lock and no waiter is left, the
// manager's counters show none held or waiting, the tables verify, sum(k)
// of sbtest1 is unchanged, and the goroutines are back to their number
// before the phase. It logs RSS over time; from 10 minutes on, RSS at the
// end must be within 20% of RSS at 5 minutes.
func TestSoak(t *testing.T) {
	total := soakDefault
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "%s=%q", soakEnv, v)
		total = d
	}
	rss := newRSSLog(total)
	start := time.Now()
	var committed, failed int
	for i := 0; time.Since(start) < total; i++ {
		ph := soakPhases[i%len(soakPhases)]
		left := total - time.Since(start)
		d := min(max(total/time.Duration(len(soakPhases)), time.Second), left)
		c, f := soakPhaseRun(t, ph, d, rss, start)
		committed += c
		failed += f
	}
	t.Logf("soak %v: %d transactions committed, %d rolled back after a lock error or a cancellation; RSS %s", total, committed, failed, rss)
	rss.check(t)
}

func soakPhaseRun(t *testing.T, ph soakPhase, d time.Duration, rss *rssLog, start time.Time) (committed, failed int) {
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
	stop := time.Now().Add(d)
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
				rss.sample(start)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "%v", ph)
	}
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

// rssLog samples the process's resident set size about twenty times over
// the soak.
type rssLog struct {
	mu      sync.Mutex
	every   time.Duration
	next    time.Duration
	total   time.Duration
	samples []rssSample
}

type rssSample struct {
	at  time.Duration
	kib int64
}

func newRSSLog(total time.Duration) *rssLog { return &rssLog{every: total / 20, total: total} }

func (l *rssLog) sample(start time.Time) {
	at := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if at < l.next {
		return
	}
	l.next = at + l.every
	l.samples = append(l.samples, rssSample{at: at.Round(max(l.every/10, time.Millisecond)), kib: rssKiB()})
}

func (l *rssLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sb strings.Builder
	for i, s := range l.samples {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(s.at.String() + " " + strconv.FormatInt(s.kib>>10, 10) + " MiB")
	}
	return sb.String()
}

// check holds RSS at the end within 20% of RSS at 5 minutes, for soaks of
// 10 minutes or more.
func (l *rssLog) check(t *testing.T) {
	if l.total < 10*time.Minute || len(l.samples) == 0 {
		return
	}
	var at5 int64
	for _, s := range l.samples {
		if s.at >= 5*time.Minute {
			at5 = s.kib
			break
		}
	}
	end := l.samples[len(l.samples)-1].kib
	require.Positive(t, at5)
	require.InDelta(t, float64(at5), float64(end), 0.2*float64(at5), "RSS at the end %d KiB, at 5 minutes %d KiB", end, at5)
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
