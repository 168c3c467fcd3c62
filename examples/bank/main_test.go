package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun: every transfer commits, and the balances read back from disk
// after a reopen sum to the opening total.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out, t.TempDir()))
	s := out.String()
	require.Regexp(t, `^4 clients made 400 transfers between 5 accounts \(\d+ retried after a deadlock or a timeout\)\n`, s)
	require.Contains(t, s, "after reopening: the balances sum to 5000 (opened with 5000)\n")
}
