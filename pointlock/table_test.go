package pointlock

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableModel drives the open-addressing table with random inserts and
// deletes — with hashes narrowed so that full 64-bit collisions and long
// probe runs are common, and across grow and shrink — against a Go map.
func TestTableModel(t *testing.T) {
	rng := newRand(t)
	for _, hashBits := range []uint{2, 6, 64} {
		var tab table
		model := map[string]*entry{}
		hashOf := func(k string) uint64 {
			h := uint64(len(k))*0x9e3779b97f4a7c15 ^ uint64(k[0])<<32 ^ uint64(k[len(k)-1])*0xff51afd7ed558ccd
			if hashBits < 64 {
				h &= 1<<hashBits - 1
				h <<= 64 - hashBits // home slots come from the high bits
			}
			return h
		}
		for i := 0; i < 20000; i++ {
			k := fmt.Sprintf("k%d", rng.IntN(300))
			h := hashOf(k)
			e, pos := tab.find(h, []byte(k))
			require.Same(t, model[k], e, "find %q", k)
			require.Same(t, model[k], tab.findString(h, k))
			if e == nil {
				if rng.IntN(3) > 0 || len(model) < 10 {
					e = &entry{key: k}
					tab.insertAt(pos, h, e)
					model[k] = e
				}
			} else if rng.IntN(2) == 0 {
				require.True(t, tab.remove(h, e))
				require.False(t, tab.remove(h, e))
				delete(model, k)
			}
			require.Equal(t, len(model), tab.n)
			if i%1000 == 0 {
				n := 0
				tab.all(func(h uint64, e *entry) {
					n++
					require.Equal(t, hashOf(e.key), h)
					require.Same(t, model[e.key], e)
				})
				require.Equal(t, len(model), n)
				require.LessOrEqual(t, tab.n*4, len(tab.slots)*3, "load factor")
			}
		}
		for k, e := range model {
			require.True(t, tab.remove(hashOf(k), e))
		}
		require.Zero(t, tab.n)
		require.LessOrEqual(t, len(tab.slots), minTableSize*2, "shrinks when emptied")
	}
}
