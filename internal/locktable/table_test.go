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

func freeLens(t *Table) []int {
	var out []int
	for l := t.free; l != nil; l = l.h.lock {
		out = append(out, len(l.Key()))
	}
	return out
}

// TestTakeFree: a fitting Lock among the newest freeSearch is taken from
// wherever it is; without one, nil from a short list, the oldest looked at
// from a long one.
func TestTakeFree(t *testing.T) {
	require.Equal(t, 4, freeSearch, "the cases below assume it")
	for _, c := range []struct {
		name   string
		list   []int
		keyLen int
		want   int // the length taken; 0: nil
		left   []int
	}{
		{"empty", nil, 8, 0, nil},
		{"newest fits", []int{8, 16}, 8, 8, []int{16}},
		{"third fits", []int{16, 16, 8, 16}, 8, 8, []int{16, 16, 16}},
		{"fourth fits", []int{16, 16, 16, 8, 8}, 8, 8, []int{16, 16, 16, 8}},
		{"fifth is too far", []int{16, 16, 16, 24, 8}, 8, 24, []int{16, 16, 16, 8}},
		{"short list, none fits", []int{16, 24}, 8, 0, []int{16, 24}},
		{"short list of three, none fits", []int{16, 24, 32}, 8, 0, []int{16, 24, 32}},
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
			require.Equal(t, c.left, freeLens(tab))
			require.Equal(t, len(c.left), tab.nfree)
		})
	}
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
	for i, l := range locks {
		require.True(t, tab.Delete(uint64(i), l))
	}
	require.False(t, tab.Delete(0, locks[0]), "not in the table any more")
	require.Equal(t, MaxFree, tab.nfree)
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
