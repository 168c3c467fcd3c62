package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun pins the whole output: the same key in two column families is
// two locks; the one in the same family conflicts.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	require.Equal(t, `column family "default" is cf 0 in the manager
column family "users" is cf 1 in the manager
column family "users_by_email" is cf 2 in the manager
txn 2's write of key 7 in users conflicts with txn 1: true
locks:
  cf 1 [7]               X holders=[1]
  cf 2 [7]               X holders=[2]
  cf 2 [ann@example.com] X holders=[1]
waits:
drop cf 2 while locked refused as in use: true
locks held after commit and rollback: 0
`, out.String())
}
