package deadlock

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// recyclableWaiter fails the test if the detector calls it once its owner
// has recycled it (lockwait.Waiter.Release): a background snapshot may
// still name it, but may call only Active, an atomic read.
type recyclableWaiter struct {
	t        *testing.T
	txn      txnlock.TxnID
	waiting  atomic.Bool
	recycled atomic.Bool
}

func newRecyclable(t *testing.T, txn txnlock.TxnID) *recyclableWaiter {
	w := &recyclableWaiter{t: t, txn: txn}
	w.waiting.Store(true)
	return w
}

func (w *recyclableWaiter) Txn() txnlock.TxnID {
	if w.recycled.Load() {
		w.t.Errorf("Txn called on txn %d's waiter after it was recycled", w.txn)
	}
	return w.txn
}

func (w *recyclableWaiter) Fail(error) bool {
	if w.recycled.Load() {
		w.t.Errorf("Fail called on txn %d's waiter after it was recycled", w.txn)
	}
	return w.waiting.CompareAndSwap(true, false)
}

func (w *recyclableWaiter) Active() bool { return w.waiting.Load() }

// TestSnapshotNamesRecycledWaiter: a background pass finds a cycle in its
// snapshot, but one member's wait ended after the snapshot (granted,
// unblocked, its waiter recycled and waiting again for a new owner, not
// yet reported). The search sees the waiter active and finds the cycle;
// the re-check against the live graph must see that the wait is gone
// without calling the recycled waiter, and must fail no one.
func TestSnapshotNamesRecycledWaiter(t *testing.T) {
	d, err := newDetector(Options{Detection: Background}, false)
	require.NoError(t, err)
	defer d.Close()
	w1, w2 := newRecyclable(t, 1), newRecyclable(t, 2)
	a, b := d.NewResource(), d.NewResource()
	d.SetBlockers(a, []txnlock.TxnID{2})
	d.SetBlockers(b, []txnlock.TxnID{1})
	d.Block(txnlock.WaitEdge{Waiter: w1, Resource: a})
	d.Block(txnlock.WaitEdge{Waiter: w2, Resource: b})
	d.testingAfterSnapshot = func() {
		// What pointlock does for a granted waiter: Grant, the waiter's
		// Unblock as its Wait returns, then Release.
		w1.waiting.Store(false)
		d.Unblock(w1)
		w1.recycled.Store(true)
		w1.waiting.Store(true) // lockwait.New for another wait
	}
	before := d.Stats()
	d.backgroundPass()
	after := d.Stats()
	require.Equal(t, before.Deadlocks, after.Deadlocks, "no deadlock: the cycle is gone")
	require.Greater(t, after.FalsePositivesAvoided, before.FalsePositivesAvoided)
	require.True(t, w2.Active(), "txn 2 still waits, not failed")
}

// lockCheckingWaiter fails the test if the detector fails it without
// holding its mutex: only under the mutex is the victim's wait known to be
// still in the graph, hence its waiter not yet recycled.
type lockCheckingWaiter struct {
	recyclableWaiter
	d      *Detector
	failed atomic.Bool
}

func (w *lockCheckingWaiter) Fail(err error) bool {
	if w.d.mu.TryLock() {
		w.d.mu.Unlock()
		w.t.Errorf("txn %d failed without the detector's mutex held", w.txn)
	}
	w.failed.Store(true)
	return w.recyclableWaiter.Fail(err)
}

// TestVictimFailedUnderMutex: on-block and background, a victim other than
// the requester is failed while the detector's mutex is held.
func TestVictimFailedUnderMutex(t *testing.T) {
	for _, det := range []Detection{OnBlock, Background} {
		t.Run(det.String(), func(t *testing.T) {
			d, err := newDetector(Options{Detection: det, Victim: VictimYoungest}, false)
			require.NoError(t, err)
			defer d.Close()
			old := &lockCheckingWaiter{recyclableWaiter: recyclableWaiter{t: t, txn: 1}, d: d}
			young := &lockCheckingWaiter{recyclableWaiter: recyclableWaiter{t: t, txn: 2}, d: d}
			old.waiting.Store(true)
			young.waiting.Store(true)
			a, b := d.NewResource(), d.NewResource()
			d.SetBlockers(a, []txnlock.TxnID{1})
			d.SetBlockers(b, []txnlock.TxnID{2})
			d.Block(txnlock.WaitEdge{Waiter: young, Resource: a})
			require.True(t, d.Block(txnlock.WaitEdge{Waiter: old, Resource: b}))
			if det == OnBlock {
				require.NoError(t, d.Check(old), "the requester is not the victim")
			} else {
				d.backgroundPass()
			}
			require.True(t, young.failed.Load(), "the youngest is the victim")
			require.False(t, old.failed.Load())
		})
	}
}
