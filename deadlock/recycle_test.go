package deadlock

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// recyclableWaiter fails the test if the detector calls it once its owner
// has recycled it (lockwait.Waiter.Release), but for Active: a background
// snapshot may still name it, and may call only Active, an atomic read.
type recyclableWaiter struct {
	*testWaiter
	t        *testing.T
	recycled atomic.Bool
}

func newRecyclable(t *testing.T, txn txnlock.TxnID, blockers ...txnlock.TxnID) *recyclableWaiter {
	return &recyclableWaiter{testWaiter: newTestWaiter(txn, blockers...), t: t}
}

func (w *recyclableWaiter) used(method string) {
	if w.recycled.Load() {
		w.t.Errorf("%s called on txn %d's waiter after it was recycled", method, w.txn)
	}
}

func (w *recyclableWaiter) Txn() txnlock.TxnID { w.used("Txn"); return w.testWaiter.Txn() }

func (w *recyclableWaiter) Fail(err error) bool { w.used("Fail"); return w.testWaiter.Fail(err) }

func (w *recyclableWaiter) Blockers(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	w.used("Blockers")
	return w.testWaiter.Blockers(dst)
}

func (w *recyclableWaiter) WaitsFor(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	w.used("WaitsFor")
	return w.testWaiter.WaitsFor(dst)
}

func (w *recyclableWaiter) edge() detect.Edge {
	e := w.testWaiter.edge()
	e.Waiter = w
	return e
}

// TestSnapshotNamesRecycledWaiter: a background pass finds a cycle in its
// snapshot, but one member's wait ended after the snapshot (granted,
// unblocked, its waiter recycled and waiting again for a new owner, not
// yet reported). The search sees the waiter active and finds the cycle;
// confirming it against live state must see that the wait is gone without
// calling the recycled waiter, and must fail no one.
func TestSnapshotNamesRecycledWaiter(t *testing.T) {
	d, err := newDetector(Options{Detection: Background}, false)
	require.NoError(t, err)
	defer d.Close()
	w1, w2 := newRecyclable(t, 1, 2), newRecyclable(t, 2, 1)
	d.block(w1.edge())
	d.block(w2.edge())
	d.testingAfterSnapshot = func() {
		// What pointlock does for a granted waiter: Grant, the waiter's
		// Unblock as its Wait returns, then Release.
		w1.end()
		d.unblock(w1)
		w1.recycled.Store(true)
		w1.ended.Store(false) // lockwait.New for another wait
	}
	before := d.Stats()
	d.backgroundPass()
	after := d.Stats()
	require.Equal(t, before.Deadlocks, after.Deadlocks, "no deadlock: the cycle is gone")
	require.Greater(t, after.FalsePositivesAvoided, before.FalsePositivesAvoided)
	require.True(t, w2.Active(), "txn 2 still waits, not failed")
}

// TestUnblockSearchCallsNoUnblockedWaiter: Unblock of a granted wait
// searches from its transaction's other waits, one after another. A wait
// among those that ends and is Unblocked and recycled meanwhile (by its
// own goroutine) must not be called: once its Unblock returned, the
// detector calls none of its methods.
//
// Txn 1 waits for a (held by 9), for c (held by 9) and for b (held by 2);
// txn 2 waits for a. a goes to txn 1: its Unblock searches from the wait
// for b, and from the wait for c. The first finds 1 -> 2 -> 1 and fails
// the wait for b (the newest); while the cycle is broken, the wait for c
// ends, and its goroutine Unblocks and recycles it.
func TestUnblockSearchCallsNoUnblockedWaiter(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	wa := newTestWaiter(1, 9)
	wc := newRecyclable(t, 1, 9)
	w2 := newTestWaiter(2, 9)
	wb := newTestWaiter(1, 2)
	// In this order, the slot lists wb before wc once wa is removed.
	d.block(wa.edge())
	d.block(wc.edge())
	d.block(w2.edge())
	d.block(wb.edge())
	d.testingOnBreak = func(*txnlock.DeadlockError) {
		wc.end()
		d.unblock(wc) // wb was failed: nothing to search
		wc.recycled.Store(true)
	}
	wa.end()
	w2.setBlockers(1)
	d.unblock(wa)
	require.ErrorIs(t, wb.Err(), txnlock.ErrDeadlock)
	require.Equal(t, uint64(1), d.Stats().Deadlocks)
}

// lockCheckingWaiter fails the test if the detector fails it without
// holding its mutex and the waiter's registry slot: only then is the
// victim's wait known to be still registered, hence its waiter not yet
// recycled.
type lockCheckingWaiter struct {
	*testWaiter
	t      *testing.T
	d      *Detector
	failed atomic.Bool
}

func (w *lockCheckingWaiter) Fail(err error) bool {
	if w.d.mu.TryLock() {
		w.d.mu.Unlock()
		w.t.Errorf("txn %d failed without the detector's mutex held", w.txn)
	}
	if s := w.d.reg.slot(w.txn); s.mu.TryLock() {
		s.mu.Unlock()
		w.t.Errorf("txn %d failed without its registry slot held", w.txn)
	}
	w.failed.Store(true)
	return w.testWaiter.Fail(err)
}

// TestVictimFailedUnderMutex: on-block and background, a victim other than
// the requester is failed while the detector's mutex and the victim's
// registry slot are held; so is the requester when it is the victim.
func TestVictimFailedUnderMutex(t *testing.T) {
	for _, tc := range []struct {
		det    Detection
		victim Victim
	}{{OnBlock, VictimYoungest}, {Background, VictimYoungest}, {OnBlock, VictimRequester}} {
		t.Run(tc.det.String()+"/"+tc.victim.String(), func(t *testing.T) {
			d, err := newDetector(Options{Detection: tc.det, Victim: tc.victim}, false)
			require.NoError(t, err)
			defer d.Close()
			old := &lockCheckingWaiter{testWaiter: newTestWaiter(1, 2), t: t, d: d}
			young := &lockCheckingWaiter{testWaiter: newTestWaiter(2, 1), t: t, d: d}
			d.block(detect.Edge{Waiter: young})
			require.True(t, d.block(detect.Edge{Waiter: old}))
			if tc.det == Background {
				require.NoError(t, d.check(old, old.Txn()))
				d.backgroundPass()
			} else if tc.victim == VictimRequester {
				require.ErrorIs(t, d.check(old, old.Txn()), txnlock.ErrDeadlock)
				require.True(t, old.failed.Load(), "the requester is the victim, failed through its waiter")
				require.False(t, young.failed.Load())
				return
			} else {
				require.NoError(t, d.check(old, old.Txn()), "the requester is not the victim")
			}
			require.True(t, young.failed.Load(), "the youngest is the victim")
			require.False(t, old.failed.Load())
		})
	}
}
