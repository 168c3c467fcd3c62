package rangelock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestFusedFollowsWideActivity: a family is fused exactly while a wide
// lock is held or a wide request waits in it, and a point request works
// the same in either mode.
func TestFusedFollowsWideActivity(t *testing.T) {
	m, err := New(Options{Stripes: 8})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	f := m.sh.Fams.Get(0)
	fused := func() bool { return f.fused.Load() }
	lock := func(txn txnlock.TxnID, r txnlock.Range) error {
		return m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: txnlock.Exclusive, Timeout: txnlock.NoWait})
	}

	require.NoError(t, lock(1, txnlock.Point([]byte("a"))))
	require.False(t, fused(), "points only")
	require.ErrorIs(t, lock(2, incl(t, "a", "c")), txnlock.ErrLockNoWait)
	require.False(t, fused(), "a wide request that failed at once leaves nothing")

	require.NoError(t, lock(2, incl(t, "m", "p")))
	require.True(t, fused(), "a wide lock held")
	require.NoError(t, lock(1, txnlock.Point([]byte("x"))), "a point outside it, fused")
	require.ErrorIs(t, lock(1, txnlock.Point([]byte("n"))), txnlock.ErrLockNoWait, "a point inside it, fused")
	require.NoError(t, m.UnlockAll(2))
	require.False(t, fused(), "the wide lock released")

	waited := make(chan error, 1)
	go func() {
		waited <- m.Lock(ctx, txnlock.Request{Txn: 3, Range: incl(t, "a", "b"), Mode: txnlock.Exclusive})
	}()
	waitUntilWaiting(t, 3)
	require.True(t, fused(), "a wide request waiting")
	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-waited)
	require.True(t, fused(), "its lock, granted")
	require.NoError(t, m.UnlockAll(3))
	require.False(t, fused())
	require.NoError(t, m.checkInvariants())
}
