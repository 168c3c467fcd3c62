package locktree

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestBadInput: invalid ranges, modes and transactions never panic and
// never change the tree.
func TestBadInput(t *testing.T) {
	tr := New()
	k := txnlock.Point([]byte("k"))
	tr.Acquire(1, k, txnlock.Exclusive)
	before := segmentString(tr)
	mem := tr.Memory()

	var zero txnlock.Range
	tr.Acquire(2, zero, txnlock.Exclusive)
	tr.Acquire(2, k, 0)
	tr.Acquire(2, k, 7)
	tr.Acquire(0, k, txnlock.Shared)
	require.ErrorIs(t, tr.Release(1, zero, nil), txnlock.ErrInvalidRange)
	require.ErrorIs(t, tr.Release(2, k, nil), txnlock.ErrNotHeld)
	require.ErrorIs(t, tr.Release(0, k, nil), txnlock.ErrNotHeld)
	require.ErrorIs(t, tr.Release(1, txnlock.Prefix([]byte("k")), nil), txnlock.ErrNotHeld)
	tr.ReleaseAll(2, func(txnlock.Range) { t.Fatal("released something of a transaction that holds nothing") })
	tr.Conflicts(2, zero, txnlock.Exclusive, func(txnlock.TxnID, txnlock.Range, txnlock.Mode) bool {
		t.Fatal("conflict on the zero range")
		return false
	})
	require.False(t, tr.HasConflict(2, zero, txnlock.Exclusive))
	require.False(t, tr.Covered(1, zero, txnlock.Shared))
	require.False(t, tr.Covered(2, k, txnlock.Shared))

	require.Equal(t, before, segmentString(tr))
	require.Equal(t, mem, tr.Memory())
	require.NoError(t, checkInvariants(tr))
	require.Equal(t, 1, tr.Len())
}

// TestCallerKeysCopied: the tree keeps copies; a caller that reuses its
// buffers after a call changes nothing.
func TestCallerKeysCopied(t *testing.T) {
	tr := New()
	buf := []byte("key-0001")
	tr.Acquire(1, txnlock.Point(buf), txnlock.Exclusive)
	long := []byte("a-key-longer-than-sixteen-bytes-1")
	r, err := txnlock.Inclusive(long, append([]byte(nil), "b"...))
	require.NoError(t, err)
	tr.Acquire(1, r, txnlock.Shared)
	copy(buf, "key-9999")
	copy(long, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
	require.True(t, tr.Covered(1, txnlock.Point([]byte("key-0001")), txnlock.Exclusive))
	require.False(t, tr.Covered(1, txnlock.Point([]byte("key-9999")), txnlock.Shared))
	require.True(t, tr.Covered(1, txnlock.Point([]byte("a-key-longer-than-sixteen-bytes-1")), txnlock.Shared))
	require.NoError(t, checkInvariants(tr))
}
