package sbtest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func TestOptions(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, "tables=1 table_size=10000 layout=shared no_sk=false dir=mem sync=false lock=point autoinc_mode=0 lock_timeout=5s detector=false manager=false pebble_logger=false cache_size=33554432 memtable_size=67108864", o.String())
	bad := Options{Tables: -1, TableSize: -1, Layout: "x", Lock: "y", AutoIncMode: 3, LockTimeout: -2, CacheSize: -1, MemTableSize: 5 << 30}
	err := bad.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	var oe *txnlock.OptionsError
	require.ErrorAs(t, err, &oe)
	require.Len(t, oe.Problems, 8, "%v", oe.Problems)
	_, err = Open(Options{Lock: LockRange, Manager: nil, Dir: t.TempDir() + "/\x00bad"})
	require.Error(t, err, "Pebble cannot open the directory")
}
