package pebbletxn

import (
	"os"
	"strconv"
	"testing"
)

// scaleEnv multiplies the rounds of the power-loss and failing-disk tests:
// unset they run at a size fit for CI; docs/RELIABILITY.md gives the
// full-size runs.
const scaleEnv = "TXNLOCK_RELIABILITY_SCALE"

// reliabilityScale returns the multiplier in scaleEnv (1 when unset).
func reliabilityScale(t testing.TB) int {
	t.Helper()
	v := os.Getenv(scaleEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", scaleEnv, v)
	}
	return n
}
