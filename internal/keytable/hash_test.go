package keytable

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyHash checks that a key's []byte and string forms hash alike, that
// every length path is taken, and that distinct short keys rarely collide.
func TestKeyHash(t *testing.T) {
	k := NewHash()
	seen := map[uint64]string{}
	for n := 0; n <= 40; n++ {
		for i := 0; i < 2000; i++ {
			key := []byte(fmt.Sprintf("%0*d", n, i))[:n]
			if n > 0 && i >= 1 && n < 4 && i >= 1000 {
				break
			}
			h := Sum(&k, key)
			require.Equal(t, h, Sum(&k, string(key)), "key %q", key)
			if prev, ok := seen[h]; ok && prev != string(key) {
				t.Fatalf("%q and %q collide", prev, key)
			}
			seen[h] = string(key)
		}
	}
	k2 := NewHash()
	require.NotEqual(t, Sum(&k, []byte("a")), Sum(&k2, []byte("a")), "seeded per manager")
}
