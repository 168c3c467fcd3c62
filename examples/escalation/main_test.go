package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun pins the whole output: the budget holds, the merged lock covers
// a gap but stops at the barrier, and the gap then conflicts.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	require.Equal(t, `txn 1 locked 1000 keys within a 16384-byte budget: true; escalations: true
it holds fewer locks than it asked for: true
the first covers pk/0000 and the gap pk/0001: true true, and no sk key: true
the last is in the index: true
txn 2's insert of pk/0001, a key txn 1 never asked for, conflicts: true
after txn 1 ends: 0 locks, 0 bytes
`, out.String())
}
