package keytable

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type freeEntry struct {
	Entry
	next *freeEntry
}

func freeNext(e *freeEntry) **freeEntry { return &e.next }

// freeList links entries with keys of the given lengths, in order.
func freeList(lens ...int) (head *freeEntry) {
	for i := len(lens) - 1; i >= 0; i-- {
		e := &freeEntry{next: head}
		e.SetKey([]byte(strings.Repeat("k", lens[i])))
		head = e
	}
	return head
}

func lensOf(head *freeEntry) []int {
	var out []int
	for e := head; e != nil; e = e.next {
		out = append(out, len(e.Key()))
	}
	return out
}

// TestTakeFree: a fitting entry among the first FreeSearch is taken from
// wherever it is; without one, nil from a short list, the last one looked
// at from a long one.
func TestTakeFree(t *testing.T) {
	require.Equal(t, 4, FreeSearch, "the cases below assume it")
	for _, c := range []struct {
		name   string
		list   []int
		keyLen int
		want   int // the length taken; 0: nil
		left   []int
	}{
		{"empty", nil, 8, 0, nil},
		{"head fits", []int{8, 16}, 8, 8, []int{16}},
		{"third fits", []int{16, 16, 8, 16}, 8, 8, []int{16, 16, 16}},
		{"fourth fits", []int{16, 16, 16, 8, 8}, 8, 8, []int{16, 16, 16, 8}},
		{"fifth is too far", []int{16, 16, 16, 24, 8}, 8, 24, []int{16, 16, 16, 8}},
		{"short list, none fits", []int{16, 24}, 8, 0, []int{16, 24}},
		{"short list of three, none fits", []int{16, 24, 32}, 8, 0, []int{16, 24, 32}},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := freeList(c.list...)
			e := TakeFree(&head, freeNext, c.keyLen)
			if c.want == 0 {
				require.Nil(t, e)
			} else {
				require.NotNil(t, e)
				require.Len(t, e.Key(), c.want)
				require.Nil(t, e.next, "unlinked")
			}
			require.Equal(t, c.left, lensOf(head))
		})
	}
}
