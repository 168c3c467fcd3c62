package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
)

// TestSbtestPrepare: sysbench's prepare (CREATE TABLE, multi-row INSERTs
// with AUTO_INCREMENT ids, CREATE INDEX with its backfill) leaves ids 1..n
// and an index that agrees with the rows; DROP TABLE removes both.
func TestSbtestPrepare(t *testing.T) {
	_, dsn := startServer(t, engine.Options{Lock: engine.LockRange, Layout: engine.LayoutPerIndex})
	db := loadSbtest(t, dsn, 500)
	require.Equal(t, [][]string{{"500", "1", "500", "500"}}, queryRows(t, db, "SELECT COUNT(*), MIN(id), MAX(id), SUM(k=id) FROM sbtest1"))
	require.Equal(t, [][]string{{"sbtest", "sbtest1", "500", "k_1", "500", "0", "0"}}, queryRows(t, db, "SELECT * FROM txnlock.table_check"))
	require.Equal(t, [][]string{{"7", "7", "c7", "pad7"}}, queryRows(t, db, "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (7, 100000)"))
	require.Equal(t, [][]string{{"3"}}, queryRows(t, db, "SELECT count(k) FROM sbtest1 WHERE k BETWEEN 1 AND 2 OR k BETWEEN 10 AND 10"))
	exec(t, db, "DROP TABLE sbtest1")
	exec(t, db, sbtestSchema)
	require.Equal(t, [][]string{{"0"}}, queryRows(t, db, "SELECT COUNT(*) FROM sbtest1"))
	exec(t, db, "INSERT INTO sbtest1(k, c, pad) VALUES (1, 'x', 'y')")
	require.Equal(t, [][]string{{"1", "1"}}, queryRows(t, db, "SELECT id, k FROM sbtest1"))
}

// TestLockRequestsPerTransaction: an oltp_write_only transaction sends
// lockbench's requests, prepared or not: 3 under point, 7 under range and
// point-sk.
func TestLockRequestsPerTransaction(t *testing.T) {
	for _, c := range []struct {
		lock engine.LockKind
		want int64
	}{{engine.LockPoint, 3}, {engine.LockRange, 7}, {engine.LockPointSK, 7}} {
		for _, interpolate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/interpolate=%t", c.lock, interpolate), func(t *testing.T) {
				_, dsn := startServer(t, engine.Options{Lock: c.lock})
				loadSbtest(t, dsn, 100)
				d := dsn("sbtest")
				if interpolate {
					d += "?interpolateParams=true"
				}
				db := open(t, d)
				before := status(t, db, "Txnlock_explicit_commit_lock_requests")
				const txns = 20
				for i := 0; i < txns; i++ {
					tx, err := db.Begin()
					require.NoError(t, err)
					id1, id2, id3 := 1+i, 30+i, 60+i
					_, err = tx.Exec("UPDATE sbtest1 SET k=k+1 WHERE id=?", id1)
					require.NoError(t, err)
					_, err = tx.Exec("UPDATE sbtest1 SET c=? WHERE id=?", "new", id2)
					require.NoError(t, err)
					_, err = tx.Exec("DELETE FROM sbtest1 WHERE id=?", id3)
					require.NoError(t, err)
					_, err = tx.Exec("INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", id3, 1000+i, "c", "pad")
					require.NoError(t, err)
					require.NoError(t, tx.Commit())
				}
				require.Equal(t, c.want*txns, status(t, db, "Txnlock_explicit_commit_lock_requests")-before)
				require.Equal(t, [][]string{{"sbtest", "sbtest1", "100", "k_1", "100", "0", "0"}}, queryRows(t, db, "SELECT * FROM txnlock.table_check"))
				require.Equal(t, int64(0), status(t, db, "Txnlock_current_locks"))
				require.Equal(t, int64(0), status(t, db, "Txnlock_open_transactions"))
			})
		}
	}
}

// TestPreparedForgotten: statements a client prepares and closes (as
// go-sql-driver does for each Exec with arguments) are forgotten by the
// session too.
func TestPreparedForgotten(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 10)
	c := conn(t, db)
	for i := 0; i < 200; i++ {
		exec(t, c, "UPDATE sbtest1 SET k=k+1 WHERE id=?", 1+i%10)
	}
	require.Less(t, status(t, db, "Txnlock_prepared_statements"), int64(40))
	require.Equal(t, [][]string{{"255"}}, queryRows(t, db, "SELECT SUM(k) FROM sbtest1"))
}
