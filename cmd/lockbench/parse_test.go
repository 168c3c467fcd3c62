package main

import (
	"testing"

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
