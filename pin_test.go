package txnlock_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// pinners returns a point and a range manager with one stripe, so that
// every transaction's record is recycled to the next one in its table.
func pinners(t *testing.T) map[string]txnlock.Pinner {
	pm, err := pointlock.New(pointlock.Options{Stripes: 1})
	require.NoError(t, err)
	rm, err := rangelock.New(rangelock.Options{Stripes: 1})
	require.NoError(t, err)
	t.Cleanup(func() { pm.Close(); rm.Close() })
	return map[string]txnlock.Pinner{"point": pm, "range": rm}
}

// heldBy returns the keys txn holds in m, from Status.
func heldBy(m txnlock.Manager, txn txnlock.TxnID) []string {
	var keys []string
	for _, l := range m.Status().Locks {
		for _, h := range l.Holders {
			if h == txn {
				k, _ := l.Range.PointKey()
				keys = append(keys, string(k))
			}
		}
	}
	return keys
}

// A Pin kept after its transaction's UnlockAll is stale: its record went
// back to the table (and here, with one stripe, to the next transaction).
// Locks taken through it must still land in the right transaction's live
// record, so that UnlockAll of that transaction, and of no other, frees
// them.
func TestPinStale(t *testing.T) {
	ctx := context.Background()
	x := func(txn txnlock.TxnID, k string) txnlock.Request {
		return txnlock.Request{Txn: txn, Range: pt(k), Mode: txnlock.Exclusive}
	}
	for name, m := range pinners(t) {
		t.Run(name, func(t *testing.T) {
			var pin txnlock.Pin
			require.NoError(t, m.LockPinned(ctx, x(1, "a"), &pin))
			require.NotNil(t, pin.Record(m), "the manager marked the pin")
			require.NoError(t, m.UnlockAll(1))

			// The record is free: a lock through the pin needs a new one.
			require.NoError(t, m.LockPinned(ctx, x(1, "b"), &pin))
			require.NoError(t, m.UnlockAll(1))
			require.Empty(t, m.Status().Locks, "UnlockAll found the lock taken through a stale pin")

			// The record is transaction 2's: a lock of 1 through the pin
			// stays 1's.
			require.NoError(t, m.LockPinned(ctx, x(1, "c"), &pin))
			require.NoError(t, m.UnlockAll(1))
			require.NoError(t, m.Lock(ctx, x(2, "d")))
			require.NoError(t, m.LockPinned(ctx, x(1, "e"), &pin))
			require.NoError(t, m.UnlockAll(2))
			require.Equal(t, []string{"e"}, heldBy(m, 1))
			require.NoError(t, m.UnlockAll(1))
			require.Empty(t, m.Status().Locks)
		})
	}
}

// A Pin marked by one manager means nothing to another, even of the same
// kind.
func TestPinOtherManager(t *testing.T) {
	ctx := context.Background()
	for name, m1 := range pinners(t) {
		t.Run(name, func(t *testing.T) {
			m2 := pinners(t)[name]
			var pin txnlock.Pin
			require.NoError(t, m1.LockPinned(ctx, txnlock.Request{Txn: 1, Range: pt("a"), Mode: txnlock.Exclusive}, &pin))
			require.Nil(t, pin.Record(m2))
			require.NoError(t, m2.LockPinned(ctx, txnlock.Request{Txn: 1, Range: pt("b"), Mode: txnlock.Exclusive}, &pin))
			require.NoError(t, m2.UnlockAll(1))
			require.Empty(t, m2.Status().Locks)
			require.Equal(t, []string{"a"}, heldBy(m1, 1))
		})
	}
}

// pinCounter is a Pinner that counts the requests that came with a pin,
// and notes a pin given to two calls at once.
type pinCounter struct {
	txnlock.Manager
	mu     sync.Mutex
	pinned int
	pins   map[*txnlock.Pin]bool // every pin seen: true while a call has it
	shared bool                  // a pin came while another call had it
	// When hold is not nil, the next LockPinned takes it, says so on
	// entered and waits for hold to close.
	hold, entered chan struct{}
}

func (p *pinCounter) LockPinned(ctx context.Context, req txnlock.Request, pin *txnlock.Pin) error {
	p.mu.Lock()
	p.pinned++
	p.shared = p.shared || p.pins[pin]
	p.pins[pin] = true
	hold := p.hold
	p.hold = nil
	p.mu.Unlock()
	if hold != nil {
		p.entered <- struct{}{}
		<-hold
	}
	p.mu.Lock()
	p.pins[pin] = false
	p.mu.Unlock()
	return p.Manager.Lock(ctx, req)
}

// The handle sends its requests with the manager's Pin once the manager
// is in its record, always the same Pin, and never one Pin to two calls
// at once: an overlapping call goes without.
func TestTxnPassesPin(t *testing.T) {
	ctx := context.Background()
	m, err := pointlock.New(pointlock.Options{})
	require.NoError(t, err)
	defer m.Close()
	pc := &pinCounter{Manager: m, pins: map[*txnlock.Pin]bool{}}
	h := txnlock.NewTxn(1)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, h.Lock(ctx, pc, txnlock.Request{Range: pt(k), Mode: txnlock.Exclusive}))
	}
	// The first request made the record: the next two came pinned.
	require.Equal(t, 2, pc.pinned)
	require.Len(t, pc.pins, 1)

	hold := make(chan struct{})
	pc.hold, pc.entered = hold, make(chan struct{})
	first := lockAsync(h, pc, txnlock.Request{Range: pt("d"), Mode: txnlock.Exclusive})
	<-pc.entered
	// The pin is busy: this call goes through Lock.
	require.NoError(t, h.Lock(ctx, pc, txnlock.Request{Range: pt("e"), Mode: txnlock.Exclusive}))
	close(hold)
	require.NoError(t, <-first)
	require.False(t, pc.shared, "one pin, two calls at once")
	require.Equal(t, 3, pc.pinned)
	require.NoError(t, h.Lock(ctx, pc, txnlock.Request{Range: pt("f"), Mode: txnlock.Exclusive}))
	require.Equal(t, 4, pc.pinned, "the pin is free again")
	require.NoError(t, h.Release())
	require.Empty(t, m.Status().Locks)
}
