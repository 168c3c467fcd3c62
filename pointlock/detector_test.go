package pointlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
)

// TestWaitRefAfterRecycling: a waiter's lock reference names its own key,
// even when the entry it waits on was recycled from an entry on which
// others waited for another key (the entry keeps a copy of its key for
// the detector's reports, and must make a new one with a new key).
func TestWaitRefAfterRecycling(t *testing.T) {
	det := contract.NewSeamDetector()
	m, err := New(Options{Stripes: 1, WaitOptions: txnlock.WaitOptions{Detector: det}})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	wait := func(holder, waiter txnlock.TxnID, key string) {
		r := txnlock.Point([]byte(key))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: holder, Range: r, Mode: txnlock.Exclusive}))
		err := m.Lock(ctx, txnlock.Request{Txn: waiter, Range: r, Mode: txnlock.Exclusive, Timeout: time.Millisecond})
		require.ErrorIs(t, err, txnlock.ErrLockTimeout)
		require.NoError(t, m.UnlockAll(holder)) // the entry goes to the free list
		require.NoError(t, m.UnlockAll(waiter))
	}
	wait(1, 2, "a")
	wait(3, 4, "b") // one stripe, one free entry: "b" gets "a"'s entry
	log := det.Log()
	var blocks []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "block ") {
			blocks = append(blocks, l)
		}
	}
	require.Len(t, blocks, 2)
	require.Contains(t, blocks[0], "[a]")
	require.Contains(t, blocks[1], "[b]")
	require.NotContains(t, log, "PROBLEM")
}
