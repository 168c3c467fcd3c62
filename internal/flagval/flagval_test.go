package flagval

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJoin: list flags print as they are typed.
func TestJoin(t *testing.T) {
	assert.Equal(t, "1,2,4", Join([]int{1, 2, 4}))
	assert.Equal(t, "", Join([]string(nil)))
}

// TestDuration: a Go duration, or a bare number of the unit; nothing else.
func TestDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"10": 10 * time.Millisecond, "2.5": 2500 * time.Microsecond, "1m30s": 90 * time.Second, "-3": -3 * time.Millisecond, " 4 ": 4 * time.Millisecond} {
		d, err := Duration(in, time.Millisecond)
		require.NoError(t, err, in)
		assert.Equal(t, want, d, in)
	}
	for _, bad := range []string{"ten", "", "1e300", "NaN", "-1e300"} {
		_, err := Duration(bad, time.Second)
		assert.Error(t, err, bad)
	}
}
