package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	s := out.String()
	require.Contains(t, s, "txn 1 locked [id/10, id/20] for its scan")
	require.Regexp(t, `txn 2 cf 0 \[id/15\] +X +blockers=\[1\]`, s)
	require.Regexp(t, `cf 0 \[id/15\] +X +holders=\[2\]`, s)
}
