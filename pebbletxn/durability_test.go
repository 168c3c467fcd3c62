package pebbletxn

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// On disk with Sync: a committed transaction survives closing and
// reopening; an uncommitted one (open at Close) leaves no trace; column
// families keep their ids.
func TestDurabilityReopen(t *testing.T) {
	dir := t.TempDir()
	open := func() (*pebble.DB, *DB) {
		pdb, err := pebble.Open(dir, &pebble.Options{Logger: quiet{}})
		require.NoError(t, err)
		db, err := New(pdb, Options{Manager: newManager(t, kindPoint, 0, nil), Sync: true})
		require.NoError(t, err)
		return pdb, db
	}
	pdb, db := open()
	cf, err := db.CreateColumnFamily("accounts")
	require.NoError(t, err)
	committed := begin(t, db)
	require.NoError(t, committed.Put(bg, cf, []byte("a"), []byte("1")))
	require.NoError(t, committed.Put(bg, txnlock.DefaultColumnFamily, []byte("d"), []byte("default")))
	require.NoError(t, committed.Commit())
	pending := begin(t, db)
	require.NoError(t, pending.Put(bg, cf, []byte("b"), []byte("2")))
	require.NoError(t, pending.Delete(bg, cf, []byte("a")))
	require.NoError(t, db.Close())
	require.NoError(t, pdb.Close())

	pdb, db = open()
	defer pdb.Close()
	defer db.Close()
	cf2, err := db.CreateColumnFamily("accounts")
	require.NoError(t, err)
	require.Equal(t, cf, cf2)
	other, err := db.CreateColumnFamily("new")
	require.NoError(t, err)
	require.NotEqual(t, cf, other, "a new column family gets a fresh id after reopen")
	r := begin(t, db)
	v, found, err := r.Get(cf2, []byte("a"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "1", string(v))
	_, found, err = r.Get(cf2, []byte("b"))
	require.NoError(t, err)
	require.False(t, found, "uncommitted write left a trace")
	require.Equal(t, "default", get(t, r, "d"))
}
