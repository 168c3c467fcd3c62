package deadlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// twoCycle records 1 -> 2 -> 1: txn 1 waits for a lock held by 2, and 2
// for one held by 1. It returns the two waiters; only the second Block
// asks for a Check.
func twoCycle(d *Detector) (*testWaiter, *testWaiter) {
	w1, w2 := newTestWaiter(1, 2), newTestWaiter(2, 1)
	d.block(w1.edge())
	d.block(w2.edge())
	return w1, w2
}

// TestAttachNilCounter: a manager attached without a counter counts no
// locks; a report does not fail for it, and Detach is safe twice.
func TestAttachNilCounter(t *testing.T) {
	d, err := New(Options{})
	require.NoError(t, err)
	defer d.Close()
	g := d.Seam().Attach(nil)
	d.Seam().Attach(heldLocks{1: 2, 2: 3})
	w1, w2 := newTestWaiter(1, 2), newTestWaiter(2, 1)
	g.Block(w1.edge())
	require.True(t, g.Block(w2.edge()))
	var de *txnlock.DeadlockError
	require.ErrorAs(t, g.Check(w2), &de)
	require.Equal(t, 3, de.Cycle[0].LocksHeld)
	require.Equal(t, 2, de.Cycle[1].LocksHeld)
	g.Detach()
	g.Detach()
}

// TestBackgroundGoroutineDeferred: in OnBlock mode a tripped search is
// handed to the real background goroutine, which breaks the cycle and
// fails the victim through its Waiter; OnDeadlock sees it, outside the
// mutex (it may call the detector).
func TestBackgroundGoroutineDeferred(t *testing.T) {
	var seen []*txnlock.DeadlockError
	var d *Detector
	reported := make(chan struct{}, 1)
	d, err := New(Options{MaxDepth: 1, Clock: manualclock.New(), OnDeadlock: func(e *txnlock.DeadlockError) {
		_ = d.Stats() // would deadlock if called under mu
		seen = append(seen, e)
		reported <- struct{}{}
	}})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	_, w2 := twoCycle(d)
	require.NoError(t, d.check(w2, w2.Txn())) // trips at depth 1: deferred
	err = <-w2.failed
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	<-reported
	require.Len(t, seen, 1)
	require.Equal(t, txnlock.TxnID(2), seen[0].Victim)
	st := d.Stats()
	require.Equal(t, uint64(1), st.Trips)
	require.Equal(t, uint64(1), st.Deferred)
	require.Equal(t, uint64(1), st.Deadlocks)
	// The victim's wait stays registered, ended, until its goroutine's
	// Unblock.
	require.Equal(t, 2, st.Waits)
	d.unblock(w2)
	require.Equal(t, 1, d.Stats().Waits)
}

// TestBackgroundGoroutinePeriodic: with Background detection and a manual clock,
// a cycle recorded without any Check is broken when the interval passes.
func TestBackgroundGoroutinePeriodic(t *testing.T) {
	clock := manualclock.New()
	broken := make(chan *txnlock.DeadlockError, 1)
	d, err := New(Options{Detection: Background, Clock: clock, BackgroundInterval: time.Second,
		OnDeadlock: func(de *txnlock.DeadlockError) { broken <- de }})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	require.Equal(t, time.Duration(0), d.Seam().Attach(heldLocks{}).DetectDelay())
	twoCycle(d)
	// Wait until the goroutine has armed its timer, then fire it.
	clock.WaitPending(1)
	clock.Advance(time.Second)
	// The requester policy in a pass fails the newest wait: txn 2's.
	require.Equal(t, txnlock.TxnID(2), (<-broken).Victim)
	require.Equal(t, uint64(1), d.Stats().Deadlocks)
	h := d.History()
	require.Len(t, h, 1)
	require.Equal(t, txnlock.TxnID(2), h[0].Victim)
	require.Equal(t, clock.Now(), h[0].Time)
}

func TestCloseTwiceAndOff(t *testing.T) {
	d, err := New(Options{})
	require.NoError(t, err)
	_, w2 := twoCycle(d)
	require.NoError(t, d.Close())
	err = d.Close()
	require.ErrorIs(t, err, txnlock.ErrClosed, "a second Close says so, as every Close in txnlock")
	require.EqualError(t, err, "txnlock: close detector: closed")
	// After Close the waits already in the graph are still searched...
	require.ErrorIs(t, d.check(w2, w2.Txn()), txnlock.ErrDeadlock)
	// ...and a new wait is refused: its waiter fails with ErrClosed.
	w3 := newTestWaiter(3, 1)
	require.False(t, d.block(w3.edge()))
	require.ErrorIs(t, <-w3.failed, txnlock.ErrClosed)
	require.Equal(t, 2, d.Stats().Waits)

	off, err := New(Options{Detection: Off})
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), off.Seam().Attach(heldLocks{}).DetectDelay())
	_, w2 = twoCycle(off)
	require.NoError(t, off.check(w2, w2.Txn()))
	require.Zero(t, off.Stats().Waits)
	require.NoError(t, off.Close())
}

// TestHistoryCopies: History returns copies a caller may change.
func TestHistoryCopies(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	_, w2 := twoCycle(d)
	require.Error(t, d.check(w2, w2.Txn()))
	h := d.History()
	require.Len(t, h, 1)
	h[0].Cycle[0].Blockers[0] = 99
	h[0].Victim = 99
	again := d.History()
	require.Equal(t, txnlock.TxnID(2), again[0].Victim)
	require.Equal(t, txnlock.TxnID(1), again[0].Cycle[0].Blockers[0])
}

// TestRecheck: a wait whose blockers changed with no new wait (a request
// it waited for left its queue) is searched from again. T2 waits for T1;
// T1's wait was reported behind T3, which waits nowhere, so Block asked
// for no Check; T3's request leaves and T1 now waits for T2: Recheck finds
// T1 → T2 → T1 and fails the newest wait, T1's.
func TestRecheck(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	g := d.Seam().Attach(nil)
	w2 := newTestWaiter(2, 1)
	require.False(t, g.Block(w2.edge()), "T1 does not wait yet")
	w1 := newTestWaiter(1, 3)
	require.False(t, g.Block(w1.edge()), "T3 does not wait")
	w1.setBlockers(2)
	g.Recheck(w1, 1)
	require.ErrorIs(t, w1.Err(), txnlock.ErrDeadlock)
	require.NoError(t, w2.Err())
	require.EqualValues(t, 1, d.Stats().Deadlocks)
}

// TestDepthCutSearchGoesOn: a path that reaches MaxDepth is cut and the
// search goes on along the others. T1 waits for T2 and T3; T2 heads a
// chain of waits deeper than the limit (T2 → T4 → … → T8), T3 waits for
// T1: the search cuts the chain, finds T1 → T3 → T1, and does not trip.
func TestDepthCutSearchGoesOn(t *testing.T) {
	d, err := newDetector(Options{MaxDepth: 3, Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	g := d.Seam().Attach(nil)
	g.Block(newTestWaiter(2, 4).edge())
	for txn := txnlock.TxnID(4); txn < 8; txn++ {
		g.Block(newTestWaiter(txn, txn+1).edge())
	}
	g.Block(newTestWaiter(3, 1).edge())
	w1 := newTestWaiter(1, 2, 3)
	require.True(t, g.Block(w1.edge()))
	var de *txnlock.DeadlockError
	require.ErrorAs(t, g.Check(w1), &de)
	require.Len(t, de.Cycle, 2)
	require.Equal(t, []txnlock.TxnID{1, 3}, []txnlock.TxnID{de.Cycle[0].Txn, de.Cycle[1].Txn})
	require.Zero(t, d.Stats().Trips)
}
