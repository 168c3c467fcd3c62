package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/txnlock/txnlock/bench"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "2.5": 2500 * time.Millisecond, "1m30s": 90 * time.Second, "-3": -3 * time.Second} {
		d, err := parseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, d, in)
	}
	for _, bad := range []string{"ten", "", "1e300", "NaN", "-1e300"} {
		_, err := parseDuration(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseLists(t *testing.T) {
	ns, err := parseIntList("1, 2,4")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 4}, ns)
	_, err = parseIntList("1,x")
	assert.ErrorContains(t, err, `"x" is not an integer`)
	assert.Equal(t, []bench.LockKind{bench.LockPoint, bench.LockRange}, parseLockList("point, range"))
}
