package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun: the watcher saw waits, per key and in its busiest sample, each
// with the transaction that blocked it.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	s := out.String()
	require.Contains(t, s, "6 clients ran 180 transactions on 3 hot keys\n")
	require.Regexp(t, `the watcher took \d+ samples of Status; [1-9]\d* showed waits\n`, s)
	require.Regexp(t, `\n  \[hot/\d\]: [1-9]\d* waits seen, at most [1-9]\d* waiters at once\n`, s)
	require.Regexp(t, `the busiest sample:\n  txn \d+ waits for \[hot/\d\] X, blocked by \[txn \d+`, s)
}
