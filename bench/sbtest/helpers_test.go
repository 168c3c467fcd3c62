package sbtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

var bg = context.Background()

// open opens an in-memory DB with opts, prepares it, and closes it at the
// end of the test.
func open(t testing.TB, opts Options) *DB {
	t.Helper()
	if opts.TableSize == 0 {
		opts.TableSize = 100
	}
	db, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Prepare(bg))
	return db
}

// verify fails the test unless the tables are consistent.
func verify(t testing.TB, db *DB) VerifyReport {
	t.Helper()
	rep, err := db.Verify()
	require.NoError(t, err, "%v", rep.Problems)
	return rep
}

// waitForWaiter polls the manager's Status until txn waits (10 s at most).
func waitForWaiter(t testing.TB, m txnlock.Manager, txn txnlock.TxnID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, w := range m.Status().Waits {
			if w.Txn == txn {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%v never waited; status:\n%v", txn, m.Status())
}

// writeOnly runs sysbench's oltp_write_only body on table 1: UPDATE k=k+1
// (id1), UPDATE c (id2), DELETE (id3), INSERT (id3, k).
func writeOnly(tx *Tx, id1, id2, id3, k int64) error {
	if _, err := tx.UpdateIndex(bg, 1, id1); err != nil {
		return err
	}
	if _, err := tx.UpdateNonIndex(bg, 1, id2, strings.Repeat("c", 119)); err != nil {
		return err
	}
	if _, err := tx.Delete(bg, 1, id3); err != nil {
		return err
	}
	return tx.Insert(bg, 1, Row{ID: id3, K: k, C: strings.Repeat("x", 119), Pad: strings.Repeat("y", 59)})
}
