package pointlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestRelockAllocatesNothing pins the "re-lock: 0 allocs/op", and
// that a lock/unlock cycle of fresh keys of one length allocates nothing
// once entries are recycled.
func TestRelockAllocatesNothing(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	req := txnlock.Request{Txn: 1, Range: txnlock.Point([]byte("0123456789abcdef")), Mode: txnlock.Exclusive}
	require.NoError(t, m.Lock(ctx, req))
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		_ = m.Lock(ctx, req)
		req.Mode = txnlock.Shared // Shared while holding Exclusive: a no-op too
		_ = m.Lock(ctx, req)
		req.Mode = txnlock.Exclusive
	}))

	_, ranges := benchKeys(64, 9)
	i := 0
	cycle := func() {
		r := ranges[i%len(ranges)]
		i++
		_ = m.Lock(ctx, txnlock.Request{Txn: 2, Range: r, Mode: txnlock.Exclusive})
		_ = m.Unlock(2, 0, r)
	}
	for range 1000 {
		cycle() // warm: entries recycled, records and tables sized
	}
	require.Zero(t, testing.AllocsPerRun(1000, cycle))

	// Keys of two lengths, as an engine's primary and secondary index
	// entries: a recycled entry's key buffer is reused only for a key of
	// its length, and the free lists come to hold both.
	for j := range ranges {
		if j%2 == 1 {
			k, _ := ranges[j].PointKey()
			ranges[j] = txnlock.Point(append(append([]byte(nil), k...), "-secondary"...))
		}
	}
	// Eight keys per run: AllocsPerRun truncates its average, and one
	// stray allocation in a few runs must show.
	txn := txnlock.TxnID(100)
	txnCycle := func() {
		txn++
		for range 8 {
			r := ranges[i%len(ranges)]
			i++
			_ = m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: txnlock.Exclusive})
		}
		_ = m.UnlockAll(txn)
	}
	for range 1000 {
		txnCycle()
	}
	require.Zero(t, testing.AllocsPerRun(1000, txnCycle))
}

// TestStatusSince checks the waiter's Since (manager clock at the start of
// the wait) and the blockers Status reports.
func TestStatusSince(t *testing.T) {
	clock := manualclock.New()
	opts := Options{}
	opts.Clock = clock
	opts.LockTimeout = txnlock.WaitForever
	m, err := New(opts)
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	k := txnlock.Point([]byte("k"))
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive}))
	clock.Advance(time.Minute)
	start := clock.Now()
	queued := make(chan txnlock.TxnID, 1)
	m.queued = func(txn txnlock.TxnID) { queued <- txn }
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx, txnlock.Request{Txn: 2, Range: k, Mode: txnlock.Shared}) }()
	require.Equal(t, txnlock.TxnID(2), <-queued)
	w := m.Status().Waits[0]
	require.Equal(t, start, w.Since)
	require.Equal(t, []txnlock.TxnID{1}, w.Blockers)
	require.Equal(t, int64(1), m.Stats().Waiting)
	clock.Advance(time.Second)
	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-done)
	s := m.Stats()
	require.Equal(t, time.Second, s.WaitTime)
	require.Zero(t, s.Waiting)
	require.Equal(t, uint64(1), s.Waited)
}

// TestUnlockAllLeavesNoRecord: transactions that Unlock their locks one
// by one and end with UnlockAll leave no record behind, and their records
// are recycled: a steady stream of them allocates nothing once warm.
func TestUnlockAllLeavesNoRecord(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	_, ranges := benchKeys(8, 3)
	txn := txnlock.TxnID(0)
	one := func() {
		txn++
		for _, r := range ranges[:1+int(txn)%len(ranges)] {
			_ = m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: txnlock.Exclusive})
		}
		for _, r := range ranges[:int(txn)%len(ranges)] {
			_ = m.Unlock(txn, 0, r)
		}
		_ = m.UnlockAll(txn)
	}
	for range 1000 {
		one()
	}
	require.Zero(t, m.sh.Txns.Len())
	require.NoError(t, m.checkInvariants())
	require.Zero(t, testing.AllocsPerRun(1000, one))
}
