package pebbletxn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestWriteBatchDeletes: Delete removes a key, DeleteRange every key of a
// range (the keys on either side stay), both applied at Commit only.
func TestWriteBatchDeletes(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			cf := txnlock.DefaultColumnFamily
			w := e.db.NewWriteBatch()
			defer w.Close()
			for _, k := range []string{"a", "b1", "b2", "b3", "c"} {
				require.NoError(t, w.Put(cf, []byte(k), []byte("v")))
			}
			require.NoError(t, w.Commit(false))
			require.NoError(t, w.Delete(cf, []byte("a")))
			require.NoError(t, w.DeleteRange(cf, txnlock.Prefix([]byte("b"))))
			keys := func() []string {
				txn, err := e.db.Begin(nil)
				require.NoError(t, err)
				defer txn.Rollback()
				var out []string
				require.NoError(t, txn.Scan(cf, txnlock.All(), func(k, _ []byte) bool { out = append(out, string(k)); return true }))
				return out
			}
			require.Equal(t, []string{"a", "b1", "b2", "b3", "c"}, keys())
			require.NoError(t, w.Commit(false))
			require.Equal(t, []string{"c"}, keys())
			require.ErrorIs(t, w.DeleteRange(cf, txnlock.Range{}), txnlock.ErrInvalidRange)
			require.ErrorIs(t, w.Delete(txnlock.ColumnFamily(77), []byte("x")), txnlock.ErrUnknownColumnFamily)
		})
	}
}

// TestSetLockTimeout: NoWait makes a later request on a held key fail at
// once; a bad value is refused and changes nothing.
func TestSetLockTimeout(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			cf := txnlock.DefaultColumnFamily
			a, err := e.db.Begin(nil)
			require.NoError(t, err)
			defer a.Rollback()
			b, err := e.db.Begin(nil)
			require.NoError(t, err)
			defer b.Rollback()
			require.NoError(t, a.Lock(context.Background(), cf, []byte("k"), txnlock.Exclusive))
			require.Error(t, b.SetLockTimeout(-5))
			require.NoError(t, b.SetLockTimeout(txnlock.NoWait))
			err = b.Lock(context.Background(), cf, []byte("k"), txnlock.Exclusive)
			require.ErrorIs(t, err, txnlock.ErrLockNoWait)
		})
	}
}
