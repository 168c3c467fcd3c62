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
	require.Equal(t, 1, strings.Count(s, "was chosen as the victim"), s)
	require.Equal(t, 1, strings.Count(s, "got its lock once the victim rolled back"), s)
	require.Contains(t, s, "LATEST DETECTED DEADLOCK")
	require.Contains(t, s, "cf 1 [k/150] mode X")
	require.Contains(t, s, "cf 0 [orders/17] mode X")
	// Each holds one lock, in the manager it does not wait in: the
	// report counts both managers.
	require.Contains(t, s, "TRANSACTION 1, holding 1 lock(s)")
	require.Contains(t, s, "TRANSACTION 2, holding 1 lock(s)")
}
