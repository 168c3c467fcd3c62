package txntable

import (
	"testing"

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
