package pebbletxn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func openOn(t *testing.T, fs vfs.FS, sync bool) (*DB, error) {
	t.Helper()
	return Open("db", OpenOptions{
		Options: Options{Manager: newManager(t, kindPoint, 0, nil), Sync: sync},
		Pebble:  &pebble.Options{FS: fs, Logger: quiet{}},
	})
}

func put(t *testing.T, db *DB, key, value string) {
	t.Helper()
	txn := begin(t, db)
	require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, []byte(key), []byte(value)))
	require.NoError(t, txn.Commit())
}

// Open creates a store, its DB closes the Pebble DB, and a reopen finds
// the data.
func TestOpenReopen(t *testing.T) {
	fs := vfs.NewMem()
	db, err := openOn(t, fs, true)
	require.NoError(t, err)
	put(t, db, "k", "v")
	require.NoError(t, db.Close())
	require.ErrorIs(t, db.Close(), txnlock.ErrClosed)
	db, err = openOn(t, fs, true)
	require.NoError(t, err)
	require.Equal(t, "v", get(t, begin(t, db), "k"))
	require.NoError(t, db.Close())
}

// A store whose manifest marker is gone is refused; Pebble alone would
// open it as a new, empty store.
func TestOpenRefusesMissingMarker(t *testing.T) {
	fs := vfs.NewMem()
	db, err := openOn(t, fs, true)
	require.NoError(t, err)
	for i := range 50 {
		put(t, db, string(rune('a'+i%26))+strings.Repeat("x", i), "v")
	}
	for range 3 { // older WALs become obsolete and go
		require.NoError(t, db.Pebble().Flush())
		put(t, db, "last", "v")
	}
	require.NoError(t, db.Close())
	names, err := fs.List("db")
	require.NoError(t, err)
	removed := 0
	for _, n := range names {
		if strings.HasPrefix(n, "marker.manifest.") {
			require.NoError(t, fs.Remove(fs.PathJoin("db", n)))
			removed++
		}
	}
	require.Equal(t, 1, removed)

	_, err = openOn(t, fs, true)
	require.ErrorIs(t, err, ErrDamagedStore)
	require.ErrorContains(t, err, "no manifest marker")
	require.True(t, strings.HasPrefix(err.Error(), `pebbletxn: open "db": damaged store: no manifest marker`), "operation first, one prefix: %v", err)

	// What the guard prevents: Pebble opens a fresh store over the files,
	// without an error, and the flushed rows are gone.
	pdb, err := pebble.Open("db", &pebble.Options{FS: fs, Logger: quiet{}})
	require.NoError(t, err)
	defer pdb.Close()
	it, err := pdb.NewIter(nil)
	require.NoError(t, err)
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	t.Logf("Pebble alone opened the store without its marker: %d keys of 51 left", n)
	require.Less(t, n, 50)
}

// A new or empty directory opens; bad options are reported before Pebble
// starts.
func TestOpenFreshAndBadOptions(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	db, err := openOn(t, fs, false)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = Open("other", OpenOptions{Pebble: &pebble.Options{FS: fs}})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	names, err := fs.List("")
	require.NoError(t, err)
	require.NotContains(t, names, "other", "Open created a store for bad options")
}

// infoLog records the informational messages Pebble logs.
type infoLog struct {
	quiet
	infos *[]string
}

func (l infoLog) Infof(format string, args ...any) {
	*l.infos = append(*l.infos, fmt.Sprintf(format, args...))
}

// Quiet drops Pebble's informational messages ("Found 0 WALs") on their
// way to the logger; without it they reach it.
func TestOpenQuiet(t *testing.T) {
	for _, quietOpt := range []bool{false, true} {
		var infos []string
		db, err := Open("db", OpenOptions{
			Options: Options{Manager: newManager(t, kindPoint, 0, nil)},
			Pebble:  &pebble.Options{FS: vfs.NewMem(), Logger: infoLog{infos: &infos}},
			Quiet:   quietOpt,
		})
		require.NoError(t, err)
		require.NoError(t, db.Close())
		if quietOpt {
			require.Empty(t, infos)
		} else {
			require.Contains(t, infos, "Found 0 WALs")
		}
	}
}
