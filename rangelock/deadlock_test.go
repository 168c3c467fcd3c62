package rangelock

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
	"go.uber.org/goleak"
)

// Deadlocks through range locks, found by one deadlock.Detector shared by
// a point and a range manager. The victim is the requester that closes the
// cycle (the detector's default), so each test knows which request fails.

func mustRange(t *testing.T, start, end string) txnlock.Range {
	r, err := txnlock.Inclusive([]byte(start), []byte(end))
	require.NoError(t, err)
	return r
}

func point(k string) txnlock.Range { return txnlock.Point([]byte(k)) }

// asyncLock starts a Lock and returns its result channel.
func asyncLock(mgr txnlock.Manager, req txnlock.Request) chan error {
	ch := make(chan error, 1)
	go func() { ch <- mgr.Lock(context.Background(), req) }()
	return ch
}

// requireDeadlock checks that err is a deadlock whose cycle is txns.
func requireDeadlock(t *testing.T, err error, txns ...txnlock.TxnID) {
	t.Helper()
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	var de *txnlock.DeadlockError
	require.True(t, errors.As(err, &de), "%v", err)
	var got []txnlock.TxnID
	for _, c := range de.Cycle {
		got = append(got, c.Txn)
	}
	slices.Sort(got)
	require.Equal(t, txns, got, "%s", de.Report())
}

func newDetector(t *testing.T) *deadlock.Detector {
	det, err := deadlock.New(deadlock.Options{})
	require.NoError(t, err)
	return det
}

func newRangeManager(t *testing.T, det txnlock.Detector) *Manager {
	opts := Options{}
	opts.Detector = det
	opts.LockTimeout = 5 * time.Second // a missed cycle fails the test by timing out
	m, err := New(opts)
	require.NoError(t, err)
	return m
}

// withRangeManager runs fn with a range manager that shares a deadlock
// detector, closes both, and checks that no goroutine is left.
func withRangeManager(t *testing.T, fn func(m *Manager, det *deadlock.Detector)) {
	defer goleak.VerifyNone(t)
	det := newDetector(t)
	defer det.Close()
	m := newRangeManager(t, det)
	defer m.Close()
	fn(m, det)
}

// TestDeadlockAcrossColumnFamilies: T1 holds [a, c] in cf 0 and waits for
// n in cf 1, which T2 holds as part of [m, p]; T2 then asks for [b, d] in
// cf 0. RocksDB's range lock manager only times out here.
func TestDeadlockAcrossColumnFamilies(t *testing.T) {
	withRangeManager(t, func(m *Manager, det *deadlock.Detector) {
		require.NoError(t, m.AddColumnFamily(1))
		ctx := context.Background()

		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, CF: 0, Range: mustRange(t, "a", "c"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 2, CF: 1, Range: mustRange(t, "m", "p"), Mode: txnlock.Exclusive}))
		t1 := asyncLock(m, txnlock.Request{Txn: 1, CF: 1, Range: point("n"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 1)
		err := m.Lock(ctx, txnlock.Request{Txn: 2, CF: 0, Range: mustRange(t, "b", "d"), Mode: txnlock.Shared})
		requireDeadlock(t, err, 1, 2)
		require.NoError(t, m.UnlockAll(2))
		require.NoError(t, <-t1)
		require.EqualValues(t, 1, m.Stats().Deadlocks)
	})
}

// TestDeadlockThroughPointAndRangeLocks: T1 holds key x in the point
// manager and waits for k in the range manager, inside T2's [a, z]; T2
// then asks the point manager for x.
func TestDeadlockThroughPointAndRangeLocks(t *testing.T) {
	defer goleak.VerifyNone(t)
	det := newDetector(t)
	defer det.Close()
	rm := newRangeManager(t, det)
	defer rm.Close()
	popts := pointlock.Options{}
	popts.Detector = det
	popts.LockTimeout = 30 * time.Second
	pm, err := pointlock.New(popts)
	require.NoError(t, err)
	defer pm.Close()
	ctx := context.Background()

	require.NoError(t, pm.Lock(ctx, txnlock.Request{Txn: 1, Range: point("x"), Mode: txnlock.Exclusive}))
	require.NoError(t, rm.Lock(ctx, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "z"), Mode: txnlock.Exclusive}))
	t1 := asyncLock(rm, txnlock.Request{Txn: 1, Range: point("k"), Mode: txnlock.Shared})
	waitUntilWaiting(t, 1)
	err = pm.Lock(ctx, txnlock.Request{Txn: 2, Range: point("x"), Mode: txnlock.Exclusive})
	requireDeadlock(t, err, 1, 2)
	require.NoError(t, rm.UnlockAll(2))
	require.NoError(t, <-t1)
	require.NoError(t, rm.UnlockAll(1))
	require.NoError(t, pm.UnlockAll(1))
}

// TestDeadlockThroughQueue: the cycle runs through a queued request, not
// a holder. T3 holds [d]; T2, which holds [x], waits for [b, d] (for T3);
// T1, which holds [a], asks for [b] and queues behind T2 (FIFO: T2 does
// not wait for T1, and holds a lock, so T1 does not skip it); T3's
// request for [a] closes T3 → T1 → T2 → T3.
func TestDeadlockThroughQueue(t *testing.T) {
	withRangeManager(t, func(m *Manager, det *deadlock.Detector) {
		ctx := context.Background()

		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("d"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("a"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 2, Range: point("x"), Mode: txnlock.Exclusive}))
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "b", "d"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 2)
		t1 := asyncLock(m, txnlock.Request{Txn: 1, Range: point("b"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 1)
		err := m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("a"), Mode: txnlock.Shared})
		requireDeadlock(t, err, 1, 2, 3)
		require.NoError(t, m.UnlockAll(3))
		require.NoError(t, <-t2)
		require.NoError(t, m.UnlockAll(2))
		require.NoError(t, <-t1)
		require.NoError(t, m.UnlockAll(1))
	})
}

// TestHolderSkipsWideWaiter: T1 holds [a]; T2 waits for [a, c], for T1.
// T1's request for [b], inside T2's range, does not queue behind T2,
// which cannot be granted before T1 ends: it is granted at once.
func TestHolderSkipsWideWaiter(t *testing.T) {
	withRangeManager(t, func(m *Manager, _ *deadlock.Detector) {
		ctx := context.Background()

		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("a"), Mode: txnlock.Exclusive}))
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "c"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 2)
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("b"), Mode: txnlock.Shared, Timeout: txnlock.NoWait}))
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t2)
		require.NoError(t, m.UnlockAll(2))
	})
}

// TestDeadlockAfterUpgrade: an upgrade that goes ahead of the queue makes
// a waiting Shared request wait for the upgrader too; the detector must
// learn that edge. T2 waits for [j, l] Shared because T5 holds j
// Exclusive; T1 holds k Shared (compatible with T2) and upgrades it at
// once. Now T2 waits for T1 as well, and T1's request for m, which T2
// holds, closes the cycle T1 → T2 → T1. Without the new edge there is no
// cycle and T1 would time out.
func TestDeadlockAfterUpgrade(t *testing.T) {
	withRangeManager(t, func(m *Manager, det *deadlock.Detector) {
		ctx := context.Background()

		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 2, Range: point("m"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 5, Range: point("j"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("k"), Mode: txnlock.Shared}))
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "j", "l"), Mode: txnlock.Shared})
		waitUntilWaiting(t, 2)
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("k"), Mode: txnlock.Exclusive}))
		require.Equal(t, []txnlock.TxnID{1, 5}, m.Status().Waits[0].Blockers)
		err := m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("m"), Mode: txnlock.Exclusive})
		requireDeadlock(t, err, 1, 2)
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, m.UnlockAll(5))
		require.NoError(t, <-t2)
		require.NoError(t, m.UnlockAll(2))
	})
}

// TestDeadlockBehindASkippingRequest: T3's point request on f skips T4's
// wide request queued ahead of it ([d, f], which waits for T3's Shared
// lock on d), so it does not wait for T4. T5's [f, h] is queued behind
// both: its nearest conflicting request on f is T3's, which does not lead
// to T4, so T5's answer must name T4 as well. T4 waits for T6's lock on d,
// T6 for T5's x in another column family, and T5's request closes
// T5 → T4 → T6 → T5.
func TestDeadlockBehindASkippingRequest(t *testing.T) {
	withRangeManager(t, func(m *Manager, det *deadlock.Detector) {
		require.NoError(t, m.AddColumnFamily(1))
		ctx := context.Background()
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("f"), Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("d"), Mode: txnlock.Shared}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 6, Range: point("d"), Mode: txnlock.Shared}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 5, CF: 1, Range: point("x"), Mode: txnlock.Exclusive}))
		t4 := asyncLock(m, txnlock.Request{Txn: 4, Range: mustRange(t, "d", "f"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 4)
		t3 := asyncLock(m, txnlock.Request{Txn: 3, Range: point("f"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 3)
		t6 := asyncLock(m, txnlock.Request{Txn: 6, CF: 1, Range: point("x"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 6)
		err := m.Lock(ctx, txnlock.Request{Txn: 5, Range: mustRange(t, "f", "h"), Mode: txnlock.Exclusive})
		requireDeadlock(t, err, 4, 5, 6)
		require.NoError(t, m.UnlockAll(5))
		require.NoError(t, <-t6)
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t3) // ahead of T4, which waits for T3's d
		require.NoError(t, m.UnlockAll(3))
		require.NoError(t, m.UnlockAll(6))
		require.NoError(t, <-t4)
		require.NoError(t, m.UnlockAll(4))
	})
}

// TestDeadlockAfterTheRequestAheadGoesIdle: whether a request passes
// one queued ahead of it is settled when they queue, so a transaction
// that lets go of its locks while its own request waits changes no one's
// wait behind that request, and the detector's answers stay the waits the
// manager grants by. T1 holds [x] and waits for [a, c] (for T3, which
// holds [b]); T2 holds [y] and waits for [c, d], behind T1's request,
// which it does not pass: T1 held a lock when it queued. T1 unlocks [x]
// (a second call while its request waits): T2 still waits for T1's
// request, and T3's request for [y] closes T3 → T2 → T1 → T3.
func TestDeadlockAfterTheRequestAheadGoesIdle(t *testing.T) {
	withRangeManager(t, func(m *Manager, det *deadlock.Detector) {
		ctx := context.Background()
		for txn, k := range map[txnlock.TxnID]string{1: "x", 2: "y", 3: "b"} {
			require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: txn, Range: point(k), Mode: txnlock.Exclusive}))
		}
		t1 := asyncLock(m, txnlock.Request{Txn: 1, Range: mustRange(t, "a", "c"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 1)
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "c", "d"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 2)
		require.Equal(t, []txnlock.TxnID{1}, blockersOf(m.Status(), 2))
		require.NoError(t, m.Unlock(1, 0, point("x")))
		require.Equal(t, []txnlock.TxnID{1}, blockersOf(m.Status(), 2), "T1's request queued as a holder's")
		err := m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("y"), Mode: txnlock.Exclusive})
		requireDeadlock(t, err, 1, 2, 3)
		require.NoError(t, m.UnlockAll(3))
		require.NoError(t, <-t1)
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t2)
		require.NoError(t, m.UnlockAll(2))
	})
}

// TestDeadlockClosedByAGrantPastTheQueue: a request granted at once past
// a queued request makes that one wait for its transaction, a new edge
// that no new wait reports. T1 holds [k]; T2, holding nothing, waits for
// [a, m], then takes [y] with a second call; T3 holds [z] and waits for
// [y] (for T2). T3's second call, [b, c], passes T2's request (queued
// idle) and is granted: T2's request now waits for T3 too, closing
// T3 → T2 → T3, and the detector, told of the pass, fails T3's wait at
// once (its background pass, which would find the cycle too, runs once
// an hour here).
func TestDeadlockClosedByAGrantPastTheQueue(t *testing.T) {
	defer goleak.VerifyNone(t)
	det, err := deadlock.New(deadlock.Options{BackgroundInterval: time.Hour})
	require.NoError(t, err)
	defer det.Close()
	m := newRangeManager(t, det)
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("k"), Mode: txnlock.Exclusive}))
	t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "m"), Mode: txnlock.Exclusive})
	waitUntilWaiting(t, 2)
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 2, Range: point("y"), Mode: txnlock.Exclusive, Timeout: txnlock.NoWait}))
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("z"), Mode: txnlock.Exclusive}))
	t3 := asyncLock(m, txnlock.Request{Txn: 3, Range: point("y"), Mode: txnlock.Exclusive})
	waitUntilWaiting(t, 3)
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 3, Range: mustRange(t, "b", "c"), Mode: txnlock.Exclusive}))
	requireDeadlock(t, <-t3, 2, 3)
	require.NoError(t, m.UnlockAll(3))
	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-t2)
	require.NoError(t, m.UnlockAll(2))
}
