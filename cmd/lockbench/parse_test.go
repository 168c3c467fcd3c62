package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/txnlock/txnlock/bench"
)

func TestParseLists(t *testing.T) {
	ns, err := parseIntList("1, 2,4")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 4}, ns)
	_, err = parseIntList("1,x")
	assert.ErrorContains(t, err, `"x" is not an integer`)
	assert.Equal(t, []bench.LockKind{bench.LockPoint, bench.LockRange}, parseLockList("point, range"))
}

func TestParseDelayRule(t *testing.T) {
	r, err := parseDelayRule("UPDATE sbtest1 SET k=k+1 WHERE id=?=100ms")
	require.NoError(t, err)
	assert.Equal(t, bench.DelayRule{Digest: "UPDATE sbtest1 SET k=k+1 WHERE id=?", Delay: 100 * time.Millisecond}, r)
	r, err = parseDelayRule("0xBE86E8D6561EAF20=100")
	require.NoError(t, err)
	assert.Equal(t, 100*time.Millisecond, r.Delay, "bare numbers are milliseconds, as ProxySQL's delay")
	for _, bad := range []string{"", "nodelay", "=5ms", "X=abc", "X=-5ms"} {
		_, err := parseDelayRule(bad)
		assert.Error(t, err, bad)
	}
}
