package deadlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestTruthConcurrent runs transactions on many goroutines against a point
// manager and a range manager, two column families each, sharing one
// Detector, and checks every cycle the detector breaks against the
// managers' Status, read at the moment the cycle is confirmed, just before
// its victim is failed (Detector.testingOnConfirm, under the detector's mutex):
// every member still waits for the lock the report names, and waits for
// the next member: transitively through Status's Blockers, or directly by
// what Status shows of the two (the next member holds, or waits since
// earlier for, a range of the same column family that overlaps the
// member's and conflicts with it: Status's Blockers name the nearest
// request ahead of a range, which may not lead to a request ahead of it on
// another of its keys). Requests wait forever and nothing cancels them,
// and the detector runs without its background goroutine: the members of
// a real cycle stay put until a check fails one, so a cycle the checks
// miss leaves its transactions stuck, and the test reports the cycle
// Status shows. When every goroutine sleeps in an active wait, the test
// runs a background pass itself, which is allowed to break a cycle only
// if a check deferred to one. (Status lists whom a request waits for as the
// queue stands; a waiter behind a victim that has yet to leave its queue
// can show no blockers for a moment, and a report met in such a moment is
// counted, not checked.)
//
// TestTruth is the same check on one goroutine, with the true graph
// known at every step; this one runs the real managers, latches and
// goroutines.
func TestTruthConcurrent(t *testing.T) {
	dur := 500 * time.Millisecond
	if *long {
		dur = 30 * time.Second
	}
	for _, victim := range []Victim{VictimRequester, VictimYoungest, VictimFewestLocks} {
		t.Run(victim.String(), func(t *testing.T) {
			runTruthConcurrent(t, victim, dur)
		})
	}
}

func runTruthConcurrent(t *testing.T, victim Victim, dur time.Duration) {
	// No background pass, and a manual clock (no search trips on time):
	// a cycle the on-block checks miss stays, and its members wait on.
	det, err := newDetector(Options{Victim: victim, Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, det.Close()) }()
	pm, rm := sharingManagers(t, det)
	require.NoError(t, pm.AddColumnFamily(1))
	require.NoError(t, rm.AddColumnFamily(1))
	defer func() { require.NoError(t, pm.Close()); require.NoError(t, rm.Close()) }()

	var mu sync.Mutex
	var problems []string
	checked, transient := 0, 0
	det.testingOnConfirm = func(de *txnlock.DeadlockError) {
		st := pm.Status()
		rs := rm.Status()
		st.Waits = append(st.Waits, rs.Waits...)
		ok, p := cycleInStatus(de, st)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ok:
			checked++
		case p == "":
			transient++
		default:
			problems = append(problems, fmt.Sprintf("%v: %s\nstatus:\n%v", de, p, st))
		}
	}

	const goroutines, keys = 24, 6
	// stuck is signalled when every goroutine still running sleeps in a
	// wait that is still active (lockwait.SetTestingParked): nothing can
	// move any more but by a background pass.
	stuck := make(chan struct{}, 1)
	var pmu sync.Mutex // guards parked and running
	parked := map[*lockwait.Waiter]bool{}
	running := goroutines
	signalLocked := func() {
		if running == 0 || len(parked) != running {
			return
		}
		for w := range parked {
			if !w.Active() {
				return // woken: its goroutine is on its way out of Wait
			}
		}
		select {
		case stuck <- struct{}{}:
		default:
		}
	}
	defer lockwait.SetTestingParked(func(w *lockwait.Waiter, sleeps bool) {
		pmu.Lock()
		defer pmu.Unlock()
		if sleeps {
			parked[w] = true
		} else {
			delete(parked, w)
		}
		signalLocked()
	})()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var nextTxn sync.Mutex
	txn := txnlock.TxnID(0)
	deadline := time.Now().Add(dur)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				pmu.Lock()
				running--
				signalLocked()
				pmu.Unlock()
			}()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				nextTxn.Lock()
				txn++
				id := txn
				nextTxn.Unlock()
				for range 1 + rng.IntN(4) {
					req := txnlock.Request{Txn: id, CF: txnlock.ColumnFamily(rng.IntN(2)), Mode: txnlock.Shared}
					if rng.IntN(2) == 0 {
						req.Mode = txnlock.Exclusive
					}
					k := rng.IntN(keys)
					var m txnlock.Manager = pm
					req.Range = txnlock.Point(fmt.Appendf(nil, "k%d", k))
					if rng.IntN(2) == 0 {
						m = rm
						if rng.IntN(3) == 0 {
							r, err := txnlock.Inclusive(fmt.Appendf(nil, "k%d", k), fmt.Appendf(nil, "k%d", min(k+1+rng.IntN(2), keys-1)))
							if err == nil {
								req.Range = r
							}
						}
					}
					if err := m.Lock(ctx, req); err != nil {
						if !errors.Is(err, txnlock.ErrDeadlock) && ctx.Err() == nil {
							mu.Lock()
							problems = append(problems, fmt.Sprintf("lock: %v", err))
							mu.Unlock()
						}
						break
					}
				}
				_ = pm.UnlockAll(id)
				_ = rm.UnlockAll(id)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The cycles end by on-block checks, or by a background pass where a
	// check deferred to one (a cycle whose confirmation met a wait not yet
	// reported or a request leaving): the test runs a pass itself each
	// time the goroutines are stuck.
	passes, byPasses := 0, uint64(0)
	for {
		select {
		case <-done:
		case <-stuck:
			if passes < 20 {
				passes++
				before := det.Stats().Deadlocks
				det.backgroundPass()
				byPasses += det.Stats().Deadlocks - before
				pmu.Lock()
				signalLocked() // still stuck: another pass, up to 20
				pmu.Unlock()
				continue
			}
			g, _ := statusTruth(pm, rm)
			t.Errorf("the transactions are stuck; a cycle in Status: %s\ngraph %s\npoint manager:\n%v\nrange manager:\n%v",
				txnsString(findCycle(g)), graphString(g), pm.Status(), rm.Status())
			cancel()
			<-done
		}
		break
	}
	st := det.Stats()
	if byPasses > st.FalsePositivesAvoided+st.Deferred {
		t.Errorf("the test's background passes broke %d cycles, more than the checks deferred (%v)", byPasses, st)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, problems)
	t.Logf("cycles checked against Status: %d, met in a transient moment: %d; background passes the test ran: %d, breaking %d cycles; %v", checked, transient, passes, byPasses, st)
	require.Zero(t, st.Trips)
}

// cycleInStatus reports whether de's cycle is in st: every member waits
// for the lock its entry names and, through Blockers, for the next
// member. When it is not, the problem says why, or is empty if the
// member's path met a waiter with no blockers (a moment in which a
// request ahead of it is leaving).
func cycleInStatus(de *txnlock.DeadlockError, st txnlock.Status) (bool, string) {
	g := map[txnlock.TxnID][]txnlock.TxnID{}
	empty := map[txnlock.TxnID]bool{}
	for _, w := range st.Waits {
		g[w.Txn] = append(g[w.Txn], w.Blockers...)
		if len(w.Blockers) == 0 {
			empty[w.Txn] = true
		}
	}
	for i, e := range de.Cycle {
		if !slices.ContainsFunc(st.Waits, func(w txnlock.WaitStatus) bool {
			return w.Txn == e.Txn && w.CF == e.Lock.CF && w.Mode == e.Lock.Mode && w.Range.Equal(e.Lock.Range)
		}) {
			return false, fmt.Sprintf("txn %d does not wait for %v", e.Txn, e.Lock)
		}
		next := de.Cycle[(i+1)%len(de.Cycle)].Txn
		if !reaches(g, e.Txn, next) && !conflictsInStatus(st, e, next) {
			for t := range empty {
				if reaches(g, e.Txn, t) || t == e.Txn {
					return false, ""
				}
			}
			return false, fmt.Sprintf("txn %d does not wait for txn %d", e.Txn, next)
		}
	}
	return true, ""
}

// conflictsInStatus reports whether Status shows next blocking e's wait
// directly: a lock of next, or a wait of next that began no later than
// e's, on a range of e's column family that overlaps e's and conflicts.
func conflictsInStatus(st txnlock.Status, e txnlock.CycleEntry, next txnlock.TxnID) bool {
	var since time.Time
	for _, w := range st.Waits {
		if w.Txn == e.Txn && w.CF == e.Lock.CF && w.Range.Equal(e.Lock.Range) {
			since = w.Since
		}
	}
	for _, l := range st.Locks {
		if l.CF == e.Lock.CF && slices.Contains(l.Holders, next) && l.Range.Overlaps(e.Lock.Range) && !l.Mode.Compatible(e.Lock.Mode) {
			return true
		}
	}
	for _, w := range st.Waits {
		if w.Txn == next && w.CF == e.Lock.CF && w.Range.Overlaps(e.Lock.Range) && !w.Mode.Compatible(e.Lock.Mode) && !w.Since.After(since) {
			return true
		}
	}
	return false
}
