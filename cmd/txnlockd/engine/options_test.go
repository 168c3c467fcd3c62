package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOptionsValidate: the zero value is valid; Validate names every
// problem at once.
func TestOptionsValidate(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, "dir=memory sync=false lock=point layout=shared autoinc_mode=0 lock_timeout=50s", o.String()[:len("dir=memory sync=false lock=point layout=shared autoinc_mode=0 lock_timeout=50s")])
	bad := Options{Lock: "table", Layout: "flat", AutoIncMode: 3, LockTimeout: -5, CacheSize: -1}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{`Lock "table"`, `Layout "flat"`, "AutoIncMode 3", "LockTimeout -5ns", "CacheSize -1"} {
		require.Contains(t, err.Error(), want)
	}
}
