// Package testenv reads the environment variables that size the project's
// long tests.
package testenv

import (
	"os"
	"strconv"
	"testing"
)

// ScaleEnv multiplies the rounds of the power-loss and failing-disk tests:
// unset they run at a size fit for CI; docs/RELIABILITY.md gives the
// full-size runs.
const ScaleEnv = "TXNLOCK_RELIABILITY_SCALE"

// ReliabilityScale returns the multiplier in ScaleEnv (1 when unset), and
// fails t on a value that is not a positive integer.
func ReliabilityScale(t testing.TB) int {
	t.Helper()
	v := os.Getenv(ScaleEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", ScaleEnv, v)
	}
	return n
}
