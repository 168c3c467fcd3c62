package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// A member of a candidate cycle stops waiting between the two
// confirmation reads: the cycle is not confirmed, nobody is failed, and
// the candidate is counted as a false one avoided.
func TestConfirmSecondRead(t *testing.T) {
	ec := startEtcd(t, 1)
	a, b := join(t, ec, "a", nil), join(t, ec, "b", nil)
	lead := connected(t, a, b)
	require.NoError(t, a.lock(1, "k1", txnlock.Exclusive))
	require.NoError(t, b.lock(2, "k2", txnlock.Exclusive))
	ctx, cancel := context.WithCancel(context.Background())
	t1 := make(chan error, 1)
	go func() {
		t1 <- b.m.Lock(ctx, txnlock.Request{Txn: 1, Range: txnlock.Point([]byte("k2")), Mode: txnlock.Exclusive})
	}()
	b.waiting(t, 1)
	between := func() {
		cancel()
		if err := <-t1; !errors.Is(err, context.Canceled) {
			t.Errorf("txn 1's wait: %v", err)
		}
	}
	lead.testingBetweenReads.Store(&between)
	t2 := a.goLock(2, "k1")
	waitFor(t, "a false candidate avoided", func() bool { return lead.Stats().FalseCandidatesAvoided > 0 })
	lead.testingBetweenReads.Store(nil)
	require.NoError(t, a.m.UnlockAll(1))
	require.NoError(t, <-t2)
	require.Zero(t, a.Stats().Victims+b.Stats().Victims)
	require.NoError(t, a.m.UnlockAll(2))
	require.NoError(t, b.m.UnlockAll(2))
}
