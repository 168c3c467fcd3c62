package rangelock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"go.uber.org/goleak"
)

var long = flag.Bool("long", false, "run the randomized tests much longer")

// held is one granted request, as the checker's model records it.
type heldLock struct {
	txn  txnlock.TxnID
	cf   txnlock.ColumnFamily
	r    txnlock.Range
	mode txnlock.Mode
}

// checker is the reference for the randomized concurrent test: the set of
// granted requests that are certainly still held. A grant is recorded
// after Lock returns, a release is forgotten before Unlock is called, so
// the model is always a subset of what the manager holds, and two
// incompatible overlapping entries of different transactions in it are a
// real violation.
type checker struct {
	t     *testing.T
	mu    sync.Mutex
	locks []heldLock
}

func (c *checker) granted(h heldLock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.locks {
		if o.txn != h.txn && o.cf == h.cf && o.r.Overlaps(h.r) && !o.mode.Compatible(h.mode) {
			c.t.Errorf("%s granted %s %v %v while %s holds %v %v", h.txn, h.cf, h.r, h.mode, o.txn, o.r, o.mode)
		}
	}
	c.locks = append(c.locks, h)
}

// forget drops txn's entries in cf that overlap r (all of them if r is
// invalid) and returns one of txn's remaining entries, for a later Unlock.
func (c *checker) forget(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.locks[:0]
	for _, o := range c.locks {
		if o.txn == txn && (all || (o.cf == cf && o.r.Overlaps(r))) {
			continue
		}
		keep = append(keep, o)
	}
	clear(c.locks[len(keep):])
	c.locks = keep
}

// randomRange returns a point (mostly) or a range over a small key space,
// with every kind of end.
func randomRange(rng *rand.Rand, keys int) txnlock.Range {
	key := func() []byte { return fmt.Appendf(nil, "k%02d", rng.IntN(keys)) }
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4, 5:
		return txnlock.Point(key())
	case 6:
		return txnlock.Prefix(fmt.Appendf(nil, "k%d", rng.IntN(keys/10+1)))
	}
	// Ends before or after a key, the key more often in the range.
	sides := []func([]byte) txnlock.Bound{txnlock.BoundBefore, txnlock.BoundAfter}
	for {
		a, b := key(), key()
		sa, eb := sides[rng.IntN(3)/2](a), sides[1-rng.IntN(3)/2](b)
		if rng.IntN(30) == 0 {
			sa = txnlock.NegInf()
		}
		if rng.IntN(30) == 0 {
			eb = txnlock.PosInf()
		}
		if r, err := txnlock.NewRange(sa, eb); err == nil {
			return r
		}
	}
}

// TestRandomConcurrent runs random transactions on several goroutines
// against one manager and checks that no two incompatible overlapping locks
// are ever held by different transactions, and that no waiter is left
// stuck: with WaitForever and a deadlock detector a missed wake-up would
// hang the run, and the Status view is polled for waiters that nothing
// blocks.
func TestRandomConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	txnsPerWorker := 300
	if *long {
		txnsPerWorker = 30000
	}
	for _, tc := range []struct {
		name      string
		stripes   int
		detector  bool
		maxMemory int64
	}{
		{name: "stripes=4/detector", stripes: 4, detector: true},
		{name: "stripes=1/timeouts", stripes: 1},
		{name: "stripes=2/detector/escalation", stripes: 2, detector: true, maxMemory: 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Stripes: tc.stripes, MaxLockMemory: tc.maxMemory}
			opts.LockTimeout = 5 * time.Millisecond
			var det *deadlock.Detector
			if tc.detector {
				var err error
				det, err = deadlock.New(deadlock.Options{})
				require.NoError(t, err)
				defer det.Close()
				opts.Detector = det
				opts.LockTimeout = txnlock.WaitForever
			}
			m, err := New(opts)
			require.NoError(t, err)
			require.NoError(t, m.AddColumnFamily(1))
			runRandom(t, m, 8, txnsPerWorker)
			require.NoError(t, m.checkInvariants())
			st := m.Status()
			require.Empty(t, st.Locks, "%v", st)
			require.Empty(t, st.Waits, "%v", st)
			stats := m.Stats()
			require.Zero(t, stats.Waiting)
			require.Zero(t, stats.LockMemory)
			t.Logf("%v", stats)
			require.NoError(t, m.Close())
		})
	}
}

func runRandom(t *testing.T, m *Manager, workers, txnsPerWorker int) {
	c := &checker{t: t}
	var nextTxn atomic.Uint64
	var wg sync.WaitGroup
	// A checker asserts the invariants, among them that no waiter could be
	// granted (a lost wake-up), again and again while the workers run; a
	// waiter stuck otherwise hangs the run into the test's timeout.
	done := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				checked <- nil
				return
			default:
			}
			if err := m.checkInvariants(); err != nil {
				checked <- err
				return
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range txnsPerWorker {
				txn := txnlock.TxnID(nextTxn.Add(1))
				var mine []heldLock
				for range 1 + rng.IntN(5) {
					req := txnlock.Request{
						Txn: txn, CF: txnlock.ColumnFamily(rng.IntN(2)),
						Range: randomRange(rng, 40), Mode: txnlock.Mode(1 + rng.IntN(2)),
					}
					if rng.IntN(20) == 0 {
						req.Timeout = txnlock.NoWait
					}
					err := m.Lock(context.Background(), req)
					if err != nil {
						if !errors.Is(err, txnlock.ErrLockNotGranted) && !errors.Is(err, txnlock.ErrDeadlock) && !errors.Is(err, txnlock.ErrLockLimit) {
							t.Errorf("lock: %v", err)
						}
						break
					}
					h := heldLock{txn, req.CF, req.Range, req.Mode}
					c.granted(h)
					mine = append(mine, h)
					if rng.IntN(4) == 0 {
						// Release one of them (still wholly held unless
						// an earlier unlock cut into it).
						i := rng.IntN(len(mine))
						u := mine[i]
						c.forget(txn, u.cf, u.r, false)
						err := m.Unlock(txn, u.cf, u.r)
						if err != nil && !errors.Is(err, txnlock.ErrNotHeld) {
							t.Errorf("unlock: %v", err)
						}
						mine = append(mine[:i], mine[i+1:]...)
						kept := mine[:0]
						for _, o := range mine {
							if !(o.cf == u.cf && o.r.Overlaps(u.r)) {
								kept = append(kept, o)
							}
						}
						mine = kept
					}
				}
				c.forget(txn, 0, txnlock.Range{}, true)
				if err := m.UnlockAll(txn); err != nil {
					t.Errorf("unlock all: %v", err)
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
		close(done)
		if err := <-checked; err != nil {
			t.Fatalf("%v; status:\n%v", err, m.Status())
		}
	case err := <-checked:
		// The workers may be stuck behind what the check found: Close
		// fails their waits.
		st := m.Status()
		m.Close()
		<-finished
		t.Fatalf("%v; status:\n%v", err, st)
	}
}
