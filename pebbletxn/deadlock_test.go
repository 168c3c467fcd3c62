package pebbletxn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
)

// Two transactions lock a and b in opposite orders. The shared detector
// finds the cycle; the victim gets a *txnlock.DeadlockError, rolls back,
// and the other transaction completes.
func TestDeadlockTwoTxns(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			det, err := deadlock.New(deadlock.Options{})
			require.NoError(t, err)
			defer det.Close()
			e := openMemWith(t, kind, newManager(t, kind, txnlock.WaitForever, det))
			t1, t2 := begin(t, e.db), begin(t, e.db)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("t1")))
			require.NoError(t, t2.Put(bg, txnlock.DefaultColumnFamily, []byte("b"), []byte("t2")))
			done := make(chan error, 1)
			go func() { done <- t1.Put(bg, txnlock.DefaultColumnFamily, []byte("b"), []byte("t1")) }()
			waitForWaiter(t, e.mgr, t1.ID())
			err2 := t2.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("t2"))
			var victim, survivor *Txn
			var verr error
			if err2 != nil {
				victim, survivor, verr = t2, t1, err2
			} else {
				// t1 was chosen: its wait failed, and t2 got a after t1
				// rolls back below.
				verr = <-done
				victim, survivor = t1, t2
			}
			require.ErrorIs(t, verr, txnlock.ErrDeadlock)
			var de *txnlock.DeadlockError
			require.True(t, errors.As(verr, &de), "%v", verr)
			require.Equal(t, victim.ID(), de.Victim)
			require.NoError(t, victim.Rollback())
			if survivor == t1 {
				require.NoError(t, <-done)
			}
			require.NoError(t, survivor.Commit())
			r := begin(t, e.db)
			want := "t1"
			if survivor == t2 {
				want = "t2"
			}
			require.Equal(t, want, get(t, r, "a"))
			require.Equal(t, want, get(t, r, "b"))
		})
	}
}
