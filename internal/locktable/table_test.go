package locktable

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// freeTable returns a Table whose recycled Locks have keys of the given
// lengths, newest first.
func freeTable(lens ...int) *Table {
	var t Table
	locks := make([]*Lock, len(lens))
	for i, n := range lens {
		key := []byte(strings.Repeat(string(rune('a'+i)), n))
		_, pos := t.Find(uint64(i), key)
		locks[i] = t.New(pos, uint64(i), key)
	}
	for i := len(locks) - 1; i >= 0; i-- {
		if !t.Delete(uint64(i), locks[i]) {
			panic("not in the table")
		}
	}
	return &t
}

// freeCounts returns how many recycled Locks t keeps per key length,
// checking each list against its Locks and the total against nfree.
func freeCounts(tb testing.TB, t *Table) map[int]int {
	out := map[int]int{}
	total := 0
	for _, f := range t.free {
		n := 0
		for l := f.head; l != nil; l = l.h.lock {
			require.Len(tb, l.Key(), int(f.keyLen), "a Lock in the list of another length")
			n++
		}
		require.EqualValues(tb, f.n, n, "a list's count")
		if n > 0 {
			_, dup := out[int(f.keyLen)]
			require.False(tb, dup, "two lists of length %d", f.keyLen)
			out[int(f.keyLen)] = n
		}
		total += n
	}
	require.Equal(tb, t.nfree, total)
	return out
}

// TestTakeFree: New takes the newest recycled Lock whose key has its
// key's length; without one, nothing while the table keeps fewer than
// freeSteal, else one from the longest list.
func TestTakeFree(t *testing.T) {
	require.Equal(t, 4, freeSteal, "the cases below assume it")
	for _, c := range []struct {
		name   string
		list   []int // lengths, deleted from last to first
		keyLen int
		want   int // the length taken; 0: nil
		left   map[int]int
	}{
		{"empty", nil, 8, 0, map[int]int{}},
		{"fits", []int{8, 16}, 8, 8, map[int]int{16: 1}},
		{"fits behind others", []int{16, 16, 24, 16, 8}, 8, 8, map[int]int{16: 3, 24: 1}},
		{"few kept, none fits", []int{16, 24, 32}, 8, 0, map[int]int{16: 1, 24: 1, 32: 1}},
		{"enough kept, none fits: the longest list gives", []int{24, 16, 16, 16}, 8, 16, map[int]int{16: 2, 24: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := freeTable(c.list...)
			l := tab.takeFree(c.keyLen)
			if c.want == 0 {
				require.Nil(t, l)
			} else {
				require.NotNil(t, l)
				require.Len(t, l.Key(), c.want)
				require.Nil(t, l.h.lock, "unlinked")
			}
			require.Equal(t, c.left, freeCounts(t, tab))
		})
	}
	t.Run("newest of its length", func(t *testing.T) {
		tab := freeTable(8, 16, 8)
		newest := tab.free[0].head
		require.Same(t, newest, tab.takeFree(8))
	})
	t.Run("a fifth length is not kept, until a list empties", func(t *testing.T) {
		tab := freeTable(8, 16, 24, 32, 40)
		require.Equal(t, map[int]int{16: 1, 24: 1, 32: 1, 40: 1}, freeCounts(t, tab), "8 was deleted last")
		require.Len(t, tab.takeFree(16).Key(), 16)
		key := []byte("12345678")
		_, pos := tab.Find(99, key)
		l := tab.New(pos, 99, key)
		require.True(t, tab.Delete(99, l))
		require.Equal(t, map[int]int{8: 1, 24: 1, 32: 1, 40: 1}, freeCounts(t, tab))
	})
}

// TestTableRecycles: a Table keeps at most MaxFree emptied Locks, none
// with a key longer than MaxFreeKey, and a fresh key of a length it has
// takes a recycled Lock.
func TestTableRecycles(t *testing.T) {
	var tab Table
	var locks []*Lock
	for i := range MaxFree + 10 {
		key := []byte(strings.Repeat("x", 7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26))
		_, pos := tab.Find(uint64(i), key)
		locks = append(locks, tab.New(pos, uint64(i), key))
	}
	long := []byte(strings.Repeat("z", MaxFreeKey+1))
	_, pos := tab.Find(1<<40, long)
	ll := tab.New(pos, 1<<40, long)
	require.True(t, tab.Delete(1<<40, ll))
	require.Zero(t, tab.nfree, "a long key is not kept")
	freeCounts(t, &tab)
	for i, l := range locks {
		require.True(t, tab.Delete(uint64(i), l))
	}
	require.False(t, tab.Delete(0, locks[0]), "not in the table any more")
	require.Equal(t, MaxFree, tab.nfree)
	freeCounts(t, &tab)
	require.Zero(t, tab.Len())
	key := []byte("xxxxxxxa")
	_, pos = tab.Find(7, key)
	require.Zero(t, testing.AllocsPerRun(1, func() {
		l := tab.New(pos, 7, key)
		require.True(t, tab.Delete(7, l))
	}))
}

// TestGrantCount: every grant of a Lock with a queue, a new holder or a
// raised mode, moves its count of grants (what a queued waiter watches,
// lockwait.Waiter.WatchGrants); a release does not.
func TestGrantCount(t *testing.T) {
	var tab Table
	_, pos := tab.Find(1, []byte("k"))
	l := tab.New(pos, 1, []byte("k"))
	h1, h2 := &Holds{Txn: 1}, &Holds{Txn: 2}
	l.Grant(h1, txnlock.Shared, 0)
	c := l.GrantCount()
	at := c.Load()
	l.Grant(h2, txnlock.Shared, 0)
	require.Equal(t, at+1, c.Load(), "a new holder")
	l.Grant(h1, txnlock.Exclusive, 0)
	require.Equal(t, at+2, c.Load(), "a raised mode")
	require.True(t, l.Release(2))
	require.Equal(t, at+2, c.Load(), "a release grants nothing")
}
