package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
)

// Validate reports every problem at once; the zero value of the optional
// fields is valid and means the defaults.
func TestOptionsValidate(t *testing.T) {
	o := Options{NodeID: "a/b", Delay: -1, LeaseTTL: -1, SnapshotInterval: -1, MaxExport: -1, ConfirmTimeout: -1, HistorySize: -1,
		Local: deadlock.Options{MaxDepth: -1, Detection: deadlock.Off}}
	err := o.Validate()
	var oe *txnlock.OptionsError
	require.True(t, errors.As(err, &oe))
	require.Equal(t, []string{
		`NodeID "a/b" contains '/'`, "Client is nil", "ListenAddr is empty", "Delay -1ns is negative",
		"LeaseTTL -1 is negative", "SnapshotInterval -1ns is negative", "MaxExport -1 is negative",
		"ConfirmTimeout -1ns is negative", "HistorySize -1 is negative",
		"Local.Detection is Off: the node reads its waits from its own detector's record of them, which Off does not keep",
		"MaxDepth -1 is negative",
	}, oe.Problems)
	var d Options
	d.EnsureDefaults()
	require.Equal(t, DefaultDelay, d.Delay)
	require.Equal(t, "node= prefix=/txnlock/deadlock/ listen= delay=100ms lease_ttl=2s snapshot_interval=1s max_export=10000 confirm_timeout=1s priority=false history_size=16 tls=false/false local={"+d.Local.String()+"}", d.String())
}

// With a node attached, a manager refuses waits without a timeout: in
// its options and in a request.
func TestFiniteWaits(t *testing.T) {
	ec := startEtcd(t, 1)
	n := join(t, ec, "a", nil)
	_, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: n, LockTimeout: txnlock.WaitForever}})
	require.Error(t, err)
	err = n.m.Lock(context.Background(), txnlock.Request{Txn: 1, Range: txnlock.Point([]byte("k")), Mode: txnlock.Exclusive, Timeout: txnlock.WaitForever})
	require.ErrorIs(t, err, txnlock.ErrInvalidTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a context deadline does not count
	defer cancel()
	require.NoError(t, n.m.Lock(ctx, txnlock.Request{Txn: 1, Range: txnlock.Point([]byte("k")), Mode: txnlock.Exclusive}))
	require.NoError(t, n.m.UnlockAll(1))
}
