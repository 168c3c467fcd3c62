package rangelock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestUnlockAllRacesGrant: a closing engine releases every transaction
// (UnlockAll of the holder and of a waiting transaction, in either order)
// while the waiter, granted by the holder's release, ends itself with
// UnlockAll too. Nothing may stay locked. (A grant once signalled the
// waiter before it registered the lock in the transaction's record: the
// waiter's UnlockAll then found nothing to release, about once in a
// hundred rounds under -race.)
func TestUnlockAllRacesGrant(t *testing.T) {
	ctx := context.Background()
	k, j := txnlock.Point([]byte("k")), txnlock.Point([]byte("j"))
	for i := range 300 {
		m, err := New(Options{})
		require.NoError(t, err)
		t1, t2 := txnlock.TxnID(1), txnlock.TxnID(2)
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: t1, Range: k, Mode: txnlock.Exclusive}))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: t2, Range: j, Mode: txnlock.Exclusive}))
		done := make(chan error, 1)
		go func() {
			err := m.Lock(ctx, txnlock.Request{Txn: t2, Range: k, Mode: txnlock.Exclusive, Timeout: time.Minute})
			if err == nil {
				err = m.UnlockAll(t2)
			}
			done <- err
		}()
		waitUntilWaiting(t, t2)
		if i%2 == 0 {
			require.NoError(t, m.UnlockAll(t2))
			require.NoError(t, m.UnlockAll(t1))
		} else {
			require.NoError(t, m.UnlockAll(t1))
			require.NoError(t, m.UnlockAll(t2))
		}
		require.NoError(t, <-done)
		st := m.Status()
		require.Empty(t, st.Locks, "round %d", i)
		require.Empty(t, st.Waits, "round %d", i)
		require.NoError(t, m.Close())
	}
}
