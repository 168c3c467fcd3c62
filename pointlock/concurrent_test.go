package pointlock

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
)

// shadow is the test's own record of who holds what. A worker adds a lock
// after Lock returns and removes it before calling Unlock, so the shadow is
// always a subset of the real holders: two incompatible holders in the
// shadow are two incompatible holders in the manager.
type shadow struct {
	mu    sync.Mutex
	locks map[string]map[txnlock.TxnID]txnlock.Mode
	bad   []string
}

func (s *shadow) add(key string, txn txnlock.TxnID, mode txnlock.Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.locks[key]
	if h == nil {
		h = map[txnlock.TxnID]txnlock.Mode{}
		s.locks[key] = h
	}
	for t, m := range h {
		if t != txn && !m.Compatible(mode) {
			s.bad = append(s.bad, fmt.Sprintf("%v got %q %v while %v holds it %v", txn, key, mode, t, m))
		}
	}
	h[txn] = h[txn].Max(mode)
}

func (s *shadow) remove(key string, txn txnlock.TxnID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.locks[key], txn)
}

// TestConcurrentRandom runs workers that lock random keys in random modes
// (upgrades included) with short timeouts, cancellations, NoWait and, for a
// transaction's first lock, WaitForever, then release one key or all. A
// checker asserts that no two incompatible holders ever coexist (shadow
// table) and that no waiter that could be granted is left waiting
// (checkInvariants, and Status: a key with waiters has holders). A lost
// wake-up hangs a WaitForever request and trips the watchdog.
func TestConcurrentRandom(t *testing.T) {
	workers, iters := 8, 300
	if *long {
		workers, iters = 32, 5000
	}
	for _, stripes := range []int{1, 16} {
		t.Run(fmt.Sprintf("stripes=%d", stripes), func(t *testing.T) {
			runConcurrent(t, stripes, workers, iters, nil)
		})
	}
	// With a detector that checks the seam (every Block is Unblocked once,
	// no resource is dropped with edges, none is left) and fails the
	// requester of each two-transaction cycle.
	t.Run("detector", func(t *testing.T) {
		det := contract.NewSeamDetector()
		runConcurrent(t, 4, workers, iters, det)
		log := det.Log()
		require.NotContains(t, log, "PROBLEM")
		require.Contains(t, log, "waits=0")
	})
}

func runConcurrent(t *testing.T, stripes, workers, iters int, det *contract.SeamDetector) {
	opts := Options{Stripes: stripes}
	if det != nil {
		opts.Detector = det
	}
	opts.LockTimeout = 2 * time.Millisecond
	m, err := New(opts)
	require.NoError(t, err)
	defer m.Close()
	sh := &shadow{locks: map[string]map[txnlock.TxnID]txnlock.Mode{}}
	keys := []string{"a", "b", "cc", "dd", "eee", "f"} // mixed lengths: recycled key buffers
	rng0 := newRand(t)

	var wg sync.WaitGroup
	// The checker runs after a worker's transaction ends (poke), as often
	// as it can keep up with, until stopCheck is closed.
	poke, stopCheck := make(chan struct{}, 1), make(chan struct{})
	checkErr := make(chan error, 1)
	go func() {
		defer close(checkErr)
		for {
			select {
			case <-stopCheck:
				return
			case <-poke:
			}
			if err := m.checkInvariants(); err != nil {
				checkErr <- err
				return
			}
			st := m.Status()
			held := map[string]bool{}
			for _, l := range st.Locks {
				k, _ := l.Range.PointKey()
				held[string(k)] = true
			}
			for _, w := range st.Waits {
				if k, _ := w.Range.PointKey(); !held[string(k)] {
					// Each key is read under one stripe mutex, so this is
					// an atomic view of that key.
					checkErr <- fmt.Errorf("%v waits for free key %q", w.Txn, k)
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	start := make(chan struct{})
	for g := 0; g < workers; g++ {
		wg.Add(1)
		seed := rng0.Uint64()
		go func(g int) {
			defer wg.Done()
			rng := newRandSeed(seed)
			<-start
			for it := 0; it < iters; it++ {
				txn := txnlock.TxnID(g*1_000_000 + it + 1)
				var mine []string
				n := 1 + rng.IntN(3)
				for j := 0; j < n; j++ {
					key := keys[rng.IntN(len(keys))]
					mode := txnlock.Shared
					if rng.IntN(2) == 0 {
						mode = txnlock.Exclusive
					}
					req := txnlock.Request{Txn: txn, Range: txnlock.Point([]byte(key)), Mode: mode}
					ctx, cancel := context.WithCancel(context.Background())
					switch x := rng.IntN(10); {
					case j == 0 && x < 3:
						req.Timeout = txnlock.WaitForever
					case x == 3:
						req.Timeout = txnlock.NoWait
					case x == 4:
						req.Timeout = txnlock.WaitForever
						time.AfterFunc(time.Duration(rng.IntN(500))*time.Microsecond, cancel)
					}
					err := m.Lock(ctx, req)
					cancel()
					if err == nil {
						sh.add(key, txn, mode)
						mine = append(mine, key)
					}
					if rng.IntN(4) == 0 {
						runtime.Gosched() // let others run while this holds locks
					}
				}
				if len(mine) > 0 && rng.IntN(3) == 0 {
					k := mine[rng.IntN(len(mine))]
					sh.remove(k, txn)
					if err := m.Unlock(txn, 0, txnlock.Point([]byte(k))); err != nil {
						t.Errorf("unlock %v %q: %v", txn, k, err)
					}
					for i := range mine {
						if mine[i] == k {
							mine[i] = ""
						}
					}
				}
				for _, k := range mine {
					if k != "" {
						sh.remove(k, txn)
					}
				}
				if err := m.UnlockAll(txn); err != nil {
					t.Errorf("unlock all %v: %v", txn, err)
				}
				select {
				case poke <- struct{}{}:
				default:
				}
			}
		}(g)
	}
	close(start)
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		close(stopCheck)
		t.Fatalf("workers hung (lost wake-up?): checker: %v, now: %v\n%v", <-checkErr, m.checkInvariants(), m.Status())
	}
	close(stopCheck)
	for err := range checkErr {
		t.Fatal(err)
	}
	sh.mu.Lock()
	require.Empty(t, sh.bad)
	sh.mu.Unlock()
	require.NoError(t, m.checkInvariants())
	// Quiescent: everything was released, nobody waits.
	st := m.Status()
	require.Empty(t, st.Locks)
	require.Empty(t, st.Waits)
	s := m.Stats()
	require.Zero(t, s.CurrentLocks)
	require.Zero(t, s.Waiting)
	require.Equal(t, s.Acquired >= s.Released, true)
	t.Logf("stats: %v", s)
}
