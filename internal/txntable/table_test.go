package txntable

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func TestTable(t *testing.T) {
	tb := New[int](5)
	require.Equal(t, 8, tb.Len())
	seen := map[*Stripe[int]]bool{}
	for id := txnlock.TxnID(1); id <= 64; id++ {
		seen[tb.Stripe(id)] = true
	}
	require.Len(t, seen, 8, "consecutive ids spread over every stripe")

	s := tb.Stripe(7)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	require.Nil(t, s.GetLocked(7))
	r, created := s.GetOrCreateLocked(7)
	require.True(t, created)
	*r = 42
	r2, created := s.GetOrCreateLocked(7)
	require.False(t, created)
	require.Same(t, r, r2)
	require.Same(t, r, s.GetLocked(7))
	require.Equal(t, 1, s.LenLocked())
	s.DeleteLocked(7)
	require.Nil(t, s.GetLocked(7), "the cache forgets a deleted record")
	r3, created := s.GetOrCreateLocked(7)
	require.True(t, created)
	require.Zero(t, *r3)
	s.ClearLocked()
	require.Nil(t, s.GetLocked(7))
	require.Zero(t, s.LenLocked())

	one := New[int](0)
	require.Equal(t, 1, one.Len())
	require.Same(t, one.At(0), one.Stripe(12345))
}

func TestRecycle(t *testing.T) {
	type rec struct {
		id  txnlock.TxnID
		buf []int
	}
	tb := New[rec](1)
	s := tb.Stripe(1)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	r1, created := s.GetOrCreateLocked(1)
	require.True(t, created)
	r1.id, r1.buf = 1, append(r1.buf, 7, 8)
	s.DeleteLocked(1)
	r1.id, r1.buf = 0, r1.buf[:0] // the caller resets what it recycles
	s.RecycleLocked(r1)
	require.Nil(t, s.GetLocked(1))

	r2, created := s.GetOrCreateLocked(2)
	require.True(t, created, "a recycled record is a new one for its next transaction")
	require.Same(t, r1, r2)
	require.Zero(t, r2.id)
	require.Empty(t, r2.buf)
	require.Equal(t, 2, cap(r2.buf), "its buffer is kept")
	r3, created := s.GetOrCreateLocked(3)
	require.True(t, created)
	require.NotSame(t, r2, r3, "the free list is empty again")

	for i := range maxFree + 10 {
		s.RecycleLocked(&rec{id: txnlock.TxnID(100 + i)})
	}
	require.Len(t, s.free, maxFree)
	s.ClearLocked()
	require.Empty(t, s.free)
}

// TestStripeSize: a stripe is one 128-byte cache-line pair, whatever R is
// (its fields hold only pointers to R).
func TestStripeSize(t *testing.T) {
	require.Equal(t, uintptr(128), unsafe.Sizeof(Stripe[struct{ a, b int }]{}))
	require.Equal(t, uintptr(128), unsafe.Sizeof(Stripe[int]{}))
}
