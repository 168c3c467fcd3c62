package pebbletxn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestLockSetModel runs random adds, removes and lookups on a lockSet
// against a map, across the switch from linear scans to the index.
func TestLockSetModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var s lockSet
		model := map[lockKey]txnlock.Mode{}
		nKeys := 4 + rng.IntN(60)
		for op := range 2000 {
			cf := txnlock.ColumnFamily(rng.IntN(2))
			key := fmt.Appendf(nil, "k%d", rng.IntN(nKeys))
			k := lockKey{cf, string(key)}
			mode := txnlock.Shared + txnlock.Mode(rng.IntN(2))
			switch rng.IntN(5) {
			case 0:
				s.removePoint(cf, key)
				delete(model, k)
			case 1, 2:
				_, at := s.covers(cf, key, mode)
				s.addPoint(at, cf, key, mode)
				model[k] = model[k].Max(mode)
			default:
				want := model[k].Covers(mode)
				got, _ := s.covers(cf, key, mode)
				require.Equal(t, want, got, "seed %d op %d: covers %v %q %v", seed, op, cf, key, mode)
			}
			require.Len(t, s.points, len(model), "seed %d op %d", seed, op)
		}
		for k, m := range model {
			got, at := s.covers(k.cf, []byte(k.key), m)
			require.True(t, got)
			require.GreaterOrEqual(t, at, 0, "covers found no point for %v", k)
		}
	}
}
