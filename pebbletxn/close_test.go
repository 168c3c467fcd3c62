package pebbletxn

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// openOwned opens an in-memory DB whose closing is left to the test: the
// Pebble DB, the manager and the DB are closed in the order a test picks.
func openOwned(t *testing.T, kind managerKind) *testEnv {
	t.Helper()
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{}})
	require.NoError(t, err)
	mgr := newManager(t, kind, 0, nil) // closed at cleanup if the test did not
	db, err := New(pdb, Options{Manager: mgr, RangeLocking: kind != kindPoint})
	require.NoError(t, err)
	return &testEnv{pdb: pdb, db: db, mgr: mgr}
}

// committed reads key straight from Pebble, bypassing the DB.
func committed(t *testing.T, pdb *pebble.DB, key string) (string, bool) {
	t.Helper()
	v, closer, err := pdb.Get(append(cfPrefix(0), key...))
	if err == pebble.ErrNotFound {
		return "", false
	}
	require.NoError(t, err)
	defer closer.Close()
	return string(v), true
}

// The documented order: the DB, then the Pebble DB, then the manager.
// Every Close returns nil; a second Close of each returns ErrClosed.
func TestCloseInOrder(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openOwned(t, kind)
			txn := begin(t, e.db)
			require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("v")))
			snap, err := e.db.NewSnapshot()
			require.NoError(t, err)
			wb := e.db.NewWriteBatch()
			require.NoError(t, wb.Put(txnlock.DefaultColumnFamily, []byte("w"), []byte("1")))
			require.NoError(t, wb.Commit(false))

			require.NoError(t, snap.Close())
			require.ErrorIs(t, snap.Close(), txnlock.ErrClosed)
			_, _, err = snap.Get(txnlock.DefaultColumnFamily, []byte("k"))
			require.ErrorIs(t, err, ErrClosed)
			require.NoError(t, wb.Close())
			require.ErrorIs(t, wb.Close(), txnlock.ErrClosed)
			require.ErrorIs(t, wb.Commit(false), ErrClosed)

			require.NoError(t, e.db.Close())
			require.ErrorIs(t, e.db.Close(), txnlock.ErrClosed)
			require.ErrorIs(t, e.db.Close(), ErrClosed)
			require.NoError(t, e.pdb.Close())
			require.NoError(t, e.mgr.Close())
			require.ErrorIs(t, e.mgr.Close(), txnlock.ErrClosed)
			require.ErrorIs(t, txn.Commit(), ErrClosed)
		})
	}
}

// The manager closed first: it dropped the open transaction's locks, so
// its Commit fails with txnlock.ErrClosed and applies nothing; a new lock
// fails too. Rollback and the DB's Close still work.
func TestCloseManagerFirst(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openOwned(t, kind)
			defer e.pdb.Close()
			writer := begin(t, e.db)
			require.NoError(t, writer.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("v")))
			ranger := begin(t, e.db)
			require.NoError(t, ranger.LockRange(bg, txnlock.DefaultColumnFamily, txnlock.Point([]byte("r")), txnlock.Exclusive))
			require.NoError(t, ranger.PutUntracked(txnlock.DefaultColumnFamily, []byte("r"), []byte("1")))
			other := begin(t, e.db)
			require.NoError(t, other.Put(bg, txnlock.DefaultColumnFamily, []byte("o"), []byte("1")))

			require.NoError(t, e.mgr.Close())

			err := writer.Commit()
			require.ErrorIs(t, err, txnlock.ErrClosed)
			require.ErrorContains(t, err, "commit")
			_, found := committed(t, e.pdb, "k")
			require.False(t, found, "a commit whose locks were dropped applied its write")
			require.ErrorIs(t, ranger.Commit(), txnlock.ErrClosed)
			_, found = committed(t, e.pdb, "r")
			require.False(t, found)

			require.ErrorIs(t, other.Put(bg, txnlock.DefaultColumnFamily, []byte("p"), []byte("2")), txnlock.ErrClosed)
			require.NoError(t, other.Rollback())
			fresh := begin(t, e.db)
			require.ErrorIs(t, fresh.Lock(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Shared), txnlock.ErrClosed)
			require.Equal(t, "<none>", get(t, fresh, "k"), "reads without locks still work")
			require.NoError(t, e.db.Close(), "Close of the DB ignores the closed manager")
		})
	}
}

// The Pebble DB closed first: every call that reaches Pebble returns a
// *StorageError wrapping pebble.ErrClosed instead of panicking (Begin
// reaches none); a transaction's Commit ends it and releases its locks.
func TestClosePebbleFirst(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openOwned(t, kind)
			txn := begin(t, e.db)
			require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("v")))
			reader := begin(t, e.db)
			require.NoError(t, e.pdb.Close())

			isClosed := func(err error) {
				t.Helper()
				require.ErrorIs(t, err, pebble.ErrClosed)
				require.ErrorIs(t, err, ErrStorage)
				var se *StorageError
				require.ErrorAs(t, err, &se)
			}
			// Begin touches no Pebble state: it succeeds, and the new
			// transaction's first read fails.
			late, err := e.db.Begin(nil)
			require.NoError(t, err)
			_, _, err = late.Get(txnlock.DefaultColumnFamily, []byte("k"))
			isClosed(err)
			require.NoError(t, late.Rollback())
			_, _, err = reader.Get(txnlock.DefaultColumnFamily, []byte("k"))
			isClosed(err)
			_, _, err = reader.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("g"), txnlock.Shared)
			isClosed(err)
			isClosed(reader.Scan(txnlock.DefaultColumnFamily, txnlock.Point([]byte("k")), func(_, _ []byte) bool { return true }))
			isClosed(reader.ScanForUpdate(bg, txnlock.DefaultColumnFamily, txnlock.Point([]byte("s")), txnlock.Shared, func(_, _ []byte) bool { return true }))
			_, err = e.db.NewSnapshot()
			isClosed(err)
			_, err = e.db.CreateColumnFamily("new")
			isClosed(err)
			wb := e.db.NewWriteBatch()
			require.NoError(t, wb.Put(txnlock.DefaultColumnFamily, []byte("w"), nil))
			isClosed(wb.Commit(true))
			require.NoError(t, wb.Close())

			require.NotEmpty(t, e.mgr.Status().Locks)
			isClosed(txn.Commit())
			require.ErrorIs(t, txn.Commit(), ErrTxnDone, "the failed commit ended the transaction")
			require.NoError(t, reader.Rollback())
			require.Empty(t, e.mgr.Status().Locks, "ended transactions released their locks")
			require.NoError(t, e.db.Close())
			require.NoError(t, e.mgr.Close())
		})
	}
}

// TestClosedErrorText: a call on a closed DB reads operation first, with
// one prefix, and still matches both ErrClosed and txnlock.ErrClosed.
func TestClosedErrorText(t *testing.T) {
	e := openMem(t, kindPoint)
	txn := begin(t, e.db)
	require.NoError(t, e.db.Close())
	for _, tc := range []struct {
		err  error
		want string
	}{
		{e.db.Close(), "pebbletxn: close: closed"},
		{txn.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), nil), fmt.Sprintf("pebbletxn: lock %v: closed", txn.ID())},
		{func() error { _, err := e.db.Begin(nil); return err }(), "pebbletxn: begin: closed"},
	} {
		require.ErrorIs(t, tc.err, ErrClosed)
		require.ErrorIs(t, tc.err, txnlock.ErrClosed)
		require.EqualError(t, tc.err, tc.want)
	}
}
