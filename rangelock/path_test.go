package rangelock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestRequestPath runs one contended point request and one contended
// range request through Lock, a wait and the wake-up that a release
// brings, and nothing else: with -coverprofile it shows which files a
// request's path runs through.
func TestRequestPath(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	for _, r := range []txnlock.Range{txnlock.Point([]byte("k")), mustHalfOpen(t, "a", "m")} {
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: r, Mode: txnlock.Exclusive}))
		done := make(chan error, 1)
		go func() { done <- m.Lock(ctx, txnlock.Request{Txn: 2, Range: r, Mode: txnlock.Exclusive}) }()
		waitUntilWaiting(t, 2)
		require.NoError(t, m.Unlock(1, txnlock.DefaultColumnFamily, r))
		require.NoError(t, <-done)
		require.NoError(t, m.Unlock(2, txnlock.DefaultColumnFamily, r))
	}
}

func mustHalfOpen(t *testing.T, a, b string) txnlock.Range {
	t.Helper()
	r, err := txnlock.HalfOpen([]byte(a), []byte(b))
	require.NoError(t, err)
	return r
}
