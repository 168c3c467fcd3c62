package rangelock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/manualclock"
	"go.uber.org/goleak"
)

func TestOptions(t *testing.T) {
	var o Options
	require.NoError(t, o.Validate(), "the zero Options mean the defaults")
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, DefaultStripes(), o.Stripes)
	require.EqualValues(t, DefaultMaxLockMemory, o.MaxLockMemory)
	require.Equal(t, txnlock.DefaultLockTimeout, o.LockTimeout)
	require.Equal(t, "lock_timeout=5s detector=none clock=system stripes="+itoa(o.Stripes)+
		" max_lock_memory=67108864 escalation_barrier=false", o.String())

	// Validate reports every problem at once.
	bad := Options{Stripes: 3, MaxLockMemory: -1}
	bad.LockTimeout = -5 * time.Second
	err := bad.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	var oe *txnlock.OptionsError
	require.True(t, errors.As(err, &oe))
	require.Len(t, oe.Problems, 3, "%v", oe.Problems) // timeout, stripes, memory
	_, err = New(Options{Stripes: 2 * MaxStripes})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	bad = Options{Stripes: -4}
	require.ErrorIs(t, bad.Validate(), txnlock.ErrInvalidOptions)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestContext: a nil or cancelled context is refused before anything
// changes; cancelling a waiter's context ends its wait with the context's
// error and leaves no trace.
func TestContext(t *testing.T) {
	defer goleak.VerifyNone(t)
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	req := txnlock.Request{Txn: 1, Range: point("a"), Mode: txnlock.Exclusive}
	var nilCtx context.Context // the bad input under test
	err = m.Lock(nilCtx, req)
	require.ErrorIs(t, err, txnlock.ErrNilContext)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, m.Lock(ctx, req), context.Canceled)
	require.Empty(t, m.Status().Locks)

	require.NoError(t, m.Lock(context.Background(), req))
	ctx, cancel = context.WithCancel(context.Background())
	wide, err := txnlock.Inclusive([]byte("a"), []byte("c"))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx, txnlock.Request{Txn: 2, Range: wide, Mode: txnlock.Shared}) }()
	waitUntilWaiting(t, 2)
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	var le *txnlock.LockError
	require.True(t, errors.As(err, &le))
	require.Equal(t, txnlock.TxnID(2), le.Txn)
	require.Empty(t, m.Status().Waits)
	require.EqualValues(t, 1, m.Stats().Canceled)

	// A context deadline ends a wait like a timeout, with the context's
	// error.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("a"), Mode: txnlock.Shared, Timeout: txnlock.WaitForever})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualValues(t, 2, m.Stats().Canceled)
	require.Empty(t, m.Status().Waits)
}

// TestCloseFailsWaiters: Close ends every wait with ErrClosed, drops the
// locks, and later calls fail with ErrClosed.
func TestCloseFailsWaiters(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := manualclock.New()
	opts := Options{}
	opts.Clock = clock
	m, err := New(opts)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: txnlock.All(), Mode: txnlock.Exclusive}))
	p := asyncLock(m, txnlock.Request{Txn: 2, Range: point("k"), Mode: txnlock.Shared})
	w := asyncLock(m, txnlock.Request{Txn: 3, Range: txnlock.Prefix([]byte("k")), Mode: txnlock.Exclusive})
	waitUntilWaiting(t, 2)
	waitUntilWaiting(t, 3)
	require.NoError(t, m.Close())
	require.ErrorIs(t, <-p, txnlock.ErrClosed)
	require.ErrorIs(t, <-w, txnlock.ErrClosed)
	require.ErrorIs(t, m.Close(), txnlock.ErrClosed)
	require.ErrorIs(t, m.Lock(ctx, txnlock.Request{Txn: 4, Range: point("z"), Mode: txnlock.Shared}), txnlock.ErrClosed)
	require.ErrorIs(t, m.AddColumnFamily(3), txnlock.ErrClosed)
	require.Empty(t, m.Status().Locks)
	require.Zero(t, m.Stats().LockMemory)
}

// TestCallerBuffers: the manager copies keys; a caller may reuse its
// buffers once a call returns.
func TestCallerBuffers(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	buf := []byte("key1")
	wide, err := txnlock.Inclusive(buf[:3], []byte("kez"))
	require.NoError(t, err)
	require.NoError(t, m.Lock(context.Background(), txnlock.Request{Txn: 1, Range: txnlock.Point(buf), Mode: txnlock.Exclusive}))
	require.NoError(t, m.Lock(context.Background(), txnlock.Request{Txn: 1, Range: wide, Mode: txnlock.Shared}))
	copy(buf, "zzzz")
	st := m.Status()
	require.Len(t, st.Locks, 3, "%v", st)
	require.Equal(t, "[key, key1)", st.Locks[0].Range.String())
	require.Equal(t, "[key1]", st.Locks[1].Range.String())
}

// TestTransactionsAllocateNothing: once warm, a stream of transactions that
// each lock a few points and end with UnlockAll allocates nothing: point
// locks, per-stripe lists and the transactions' records are all recycled.
func TestTransactionsAllocateNothing(t *testing.T) {
	t.Run("one key length", func(t *testing.T) {
		testAllocateNothing(t, func(i int) []byte { return fmt.Appendf(nil, "key-%012d", i) })
	})
	// As an engine's primary and secondary index entries: a recycled
	// lock's key buffer is reused only for a key of its length.
	t.Run("two key lengths", func(t *testing.T) {
		testAllocateNothing(t, func(i int) []byte {
			if i%2 == 0 {
				return fmt.Appendf(nil, "pk-%011d", i)
			}
			return fmt.Appendf(nil, "sk-%011d-%07d", i, i)
		})
	})
}

func testAllocateNothing(t *testing.T, key func(int) []byte) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = key(i)
	}
	txn := txnlock.TxnID(0)
	one := func() {
		txn++
		for i := range 8 {
			k := keys[(int(txn)*8+i)%len(keys)]
			_ = m.Lock(ctx, txnlock.Request{Txn: txn, Range: txnlock.Point(k), Mode: txnlock.Exclusive})
		}
		_ = m.UnlockAll(txn)
	}
	for range 1000 {
		one()
	}
	require.Zero(t, testing.AllocsPerRun(1000, one))
}

// TestStatsKeepDroppedFamilies: the counters of a dropped column family
// stay in Stats.
func TestStatsKeepDroppedFamilies(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	require.NoError(t, m.AddColumnFamily(1))
	wide, err := txnlock.Inclusive([]byte("a"), []byte("c"))
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, CF: 1, Range: point("k"), Mode: txnlock.Exclusive}))
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, CF: 1, Range: wide, Mode: txnlock.Shared}))
	err = m.Lock(ctx, txnlock.Request{Txn: 2, CF: 1, Range: point("k"), Mode: txnlock.Shared, Timeout: txnlock.NoWait})
	require.ErrorIs(t, err, txnlock.ErrLockNoWait)
	require.NoError(t, m.UnlockAll(1))
	before := m.Stats()
	require.NoError(t, m.DropColumnFamily(1))
	after := m.Stats()
	require.Equal(t, before, after)
	require.EqualValues(t, 2, after.Acquired)
	require.EqualValues(t, 2, after.Released)
	require.EqualValues(t, 1, after.Timeouts)
}

// TestFailedRequestsLeaveNoRecord: a transaction whose every request
// failed (a wait that timed out, NoWait) holds nothing and is never
// released with UnlockAll by a txnlock.Txn handle: the manager keeps no
// record of it.
func TestFailedRequestsLeaveNoRecord(t *testing.T) {
	m, err := New(Options{})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	wide, err := txnlock.Inclusive([]byte("a"), []byte("c"))
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: wide, Mode: txnlock.Exclusive}))
	for _, r := range []txnlock.Range{wide, txnlock.Point([]byte("b"))} {
		for _, timeout := range []time.Duration{txnlock.NoWait, time.Millisecond} {
			err := m.Lock(ctx, txnlock.Request{Txn: 2, Range: r, Mode: txnlock.Exclusive, Timeout: timeout})
			require.ErrorIs(t, err, txnlock.ErrLockNotGranted)
		}
	}
	require.Equal(t, 1, m.sh.Txns.Len(), "only the holder's record")
	require.NoError(t, m.UnlockAll(1))
	require.Zero(t, m.sh.Txns.Len())
}
