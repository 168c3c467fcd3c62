package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun: no increment is lost, and no lock outlives its transaction.
func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	require.Regexp(t, `^counter = 400 after 400 increments by 4 clients \(\d+ retried after a deadlock\)\nlocks held now: 0\n$`, out.String())
}
