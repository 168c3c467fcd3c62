package keytable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableModel drives the open-addressing table with random inserts and
// deletes — with hashes narrowed so that full 64-bit collisions and long
// probe runs are common, and across grow and shrink — against a Go map.
func TestTableModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, hashBits := range []uint{2, 6, 64} {
		var tab Table[testEntry]
		model := map[string]*testEntry{}
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
			e, pos := tab.Find(h, []byte(k))
			require.Same(t, model[k], e, "find %q", k)
			require.Same(t, model[k], tab.FindString(h, k))
			if e == nil {
				if rng.IntN(3) > 0 || len(model) < 10 {
					e = &testEntry{}
					e.SetKey([]byte(k))
					tab.InsertAt(pos, h, e)
					model[k] = e
				}
			} else if rng.IntN(2) == 0 {
				require.True(t, tab.Remove(h, e))
				require.False(t, tab.Remove(h, e))
				delete(model, k)
			}
			require.Equal(t, len(model), tab.n)
			if i%1000 == 0 {
				n := 0
				tab.All(func(h uint64, e *testEntry) bool {
					n++
					require.Equal(t, hashOf(e.Key()), h)
					require.Same(t, model[e.Key()], e)
					return true
				})
				require.Equal(t, len(model), n)
				require.LessOrEqual(t, tab.n*4, len(tab.slots)*3, "load factor")
			}
		}
		for k, e := range model {
			require.True(t, tab.Remove(hashOf(k), e))
		}
		require.Zero(t, tab.n)
		require.LessOrEqual(t, len(tab.slots), MinSize*2, "shrinks when emptied")
	}
}

type testEntry struct {
	Entry
	x int
}

func TestValid(t *testing.T) {
	require.True(t, Valid[testEntry]())
	type bad struct {
		x int
		Entry
	}
	require.False(t, Valid[bad]())
	require.False(t, Valid[int]())
}

// TestSetKeyReuse checks that a recycled entry keeps its buffer for a key
// of the same length and takes a new one otherwise.
func TestSetKeyReuse(t *testing.T) {
	var e Entry
	e.SetKey([]byte("abcd"))
	old := e.Key()
	e.SetKey([]byte("wxyz"))
	require.Equal(t, "wxyz", e.Key())
	require.Equal(t, "wxyz", string(e.KeyBytes()))
	require.Equal(t, "wxyz", old, "same length: buffer reused")
	e.SetKey([]byte("long key"))
	require.Equal(t, "long key", e.Key())
	require.Equal(t, "wxyz", old, "other length: new buffer")
}
