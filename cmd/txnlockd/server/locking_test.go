package server

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
)

// begin opens a session with a transaction started.
func begin(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c := conn(t, db)
	exec(t, c, "BEGIN")
	return c
}

// TestDeadlock: a 2-cycle fails the transaction whose wait closed it
// with 1213 (40001) and rolls it back; the other goes on. SHOW ENGINE
// INNODB STATUS reports it, and the counter counts it.
func TestDeadlock(t *testing.T) {
	for _, lock := range []engine.LockKind{engine.LockPoint, engine.LockRange} {
		t.Run(string(lock), func(t *testing.T) {
			ts, dsn := startServer(t, engine.Options{Lock: lock})
			db := loadSbtest(t, dsn, 10)
			a, b := begin(t, db), begin(t, db)
			exec(t, a, "UPDATE sbtest1 SET c='a' WHERE id=1")
			exec(t, b, "UPDATE sbtest1 SET c='b' WHERE id=2")
			done := make(chan error)
			go func() {
				_, err := a.ExecContext(context.Background(), "UPDATE sbtest1 SET c='a' WHERE id=2")
				done <- err
			}()
			<-ts.waits // a waits for b
			_, err := b.ExecContext(context.Background(), "UPDATE sbtest1 SET c='b' WHERE id=1")
			require.Equal(t, uint16(1213), mysqlErr(err), "%v", err)
			require.Contains(t, err.Error(), "40001")
			require.NoError(t, <-done)
			exec(t, a, "COMMIT")
			// b's first update was rolled back with it; b is in no transaction.
			require.Equal(t, [][]string{{"1", "a"}, {"2", "a"}}, queryRows(t, db, "SELECT id, c FROM sbtest1 WHERE id IN (1, 2)"))
			require.Equal(t, int64(1), status(t, db, "Txnlock_deadlock_errors"))
			st := queryRows(t, db, "SHOW ENGINE INNODB STATUS")[0][2]
			require.Contains(t, st, "LATEST DETECTED DEADLOCK")
			require.Contains(t, st, "WE ROLL BACK TRANSACTION")
			require.Equal(t, int64(0), status(t, db, "Txnlock_current_locks"))
		})
	}
}

// TestLockWaitTimeout: 1205 (HY000) after innodb_lock_wait_timeout, the
// transaction rolled back.
func TestLockWaitTimeout(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 10)
	a, b := begin(t, db), conn(t, db)
	exec(t, a, "UPDATE sbtest1 SET c='a' WHERE id=1")
	exec(t, b, "SET SESSION innodb_lock_wait_timeout=1")
	require.Equal(t, [][]string{{"1"}}, queryRows(t, b, "SELECT @@innodb_lock_wait_timeout"))
	exec(t, b, "BEGIN")
	exec(t, b, "UPDATE sbtest1 SET c='b' WHERE id=2")
	_, err := b.ExecContext(context.Background(), "UPDATE sbtest1 SET c='b' WHERE id=1")
	require.Equal(t, uint16(1205), mysqlErr(err), "%v", err)
	require.Contains(t, err.Error(), "HY000")
	exec(t, a, "COMMIT")
	require.Equal(t, [][]string{{"a"}, {"c2"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id IN (1, 2)"))
	require.Equal(t, int64(1), status(t, db, "Txnlock_lock_wait_timeout_errors"))
}

// TestNoWait: FOR UPDATE NOWAIT on a locked row fails at once with 3572
// and leaves the transaction open; SKIP LOCKED is refused by name.
func TestNoWait(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 10)
	a, b := begin(t, db), begin(t, db)
	exec(t, a, "SELECT c FROM sbtest1 WHERE id=1 FOR UPDATE")
	exec(t, b, "UPDATE sbtest1 SET c='b' WHERE id=2")
	_, err := b.ExecContext(context.Background(), "SELECT c FROM sbtest1 WHERE id=1 FOR UPDATE NOWAIT")
	require.Equal(t, uint16(3572), mysqlErr(err), "%v", err)
	_, err = b.ExecContext(context.Background(), "SELECT c FROM sbtest1 WHERE id=1 FOR UPDATE SKIP LOCKED")
	require.Equal(t, uint16(1235), mysqlErr(err))
	require.Contains(t, err.Error(), "SKIP LOCKED")
	exec(t, b, "COMMIT") // still open: its update commits
	exec(t, a, "COMMIT")
	require.Equal(t, [][]string{{"b"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=2"))
	require.Equal(t, [][]string{{"c1"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=1 LOCK IN SHARE MODE"))
	require.Equal(t, [][]string{{"c1"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=1 FOR SHARE"))
}

// TestGapInsert: under range locking an INSERT into the gap of another
// transaction's BETWEEN … FOR UPDATE waits until that one commits; under
// point locking it does not wait (a phantom).
func TestGapInsert(t *testing.T) {
	for _, lock := range []engine.LockKind{engine.LockPoint, engine.LockRange} {
		t.Run(string(lock), func(t *testing.T) {
			ts, dsn := startServer(t, engine.Options{Lock: lock})
			db := loadSbtest(t, dsn, 30)
			exec(t, db, "DELETE FROM sbtest1 WHERE id=15")
			a := begin(t, db)
			require.Len(t, queryRows(t, a, "SELECT id FROM sbtest1 WHERE id BETWEEN 10 AND 20 FOR UPDATE"), 10)
			b := conn(t, db)
			done := make(chan error, 1)
			go func() {
				_, err := b.ExecContext(context.Background(), "INSERT INTO sbtest1 (id, k, c, pad) VALUES (15, 15, 'new', '')")
				done <- err
			}()
			if lock == engine.LockRange {
				<-ts.waits
				rows := queryRows(t, db, "SELECT LOCK_STATUS, INDEX_NAME, LOCK_DATA FROM performance_schema.data_locks WHERE LOCK_STATUS = 'WAITING'")
				require.Equal(t, [][]string{{"WAITING", "PRIMARY", "15"}}, rows)
				require.Len(t, queryRows(t, db, "SELECT * FROM performance_schema.data_lock_waits"), 1)
				require.Len(t, queryRows(t, a, "SELECT id FROM sbtest1 WHERE id BETWEEN 10 AND 20 FOR UPDATE"), 10, "no phantom")
				exec(t, a, "COMMIT")
				require.NoError(t, <-done)
			} else {
				require.NoError(t, <-done)
				require.Len(t, queryRows(t, a, "SELECT id FROM sbtest1 WHERE id BETWEEN 10 AND 20 FOR UPDATE"), 11, "a phantom")
				exec(t, a, "COMMIT")
			}
		})
	}
}

// TestDeleteInsert: oltp_write_only's DELETE then INSERT of one id in a
// transaction; the id is a duplicate once more after the INSERT, another
// session's INSERT of it waits for the transaction, and a rollback brings
// the deleted row back.
func TestDeleteInsert(t *testing.T) {
	for _, lock := range []engine.LockKind{engine.LockPoint, engine.LockRange} {
		t.Run(string(lock), func(t *testing.T) {
			ts, dsn := startServer(t, engine.Options{Lock: lock})
			db := loadSbtest(t, dsn, 10)
			a := begin(t, db)
			exec(t, a, "DELETE FROM sbtest1 WHERE id=5")
			exec(t, a, "INSERT INTO sbtest1 (id, k, c, pad) VALUES (5, 5, 'new', '')")
			_, err := a.ExecContext(context.Background(), "INSERT INTO sbtest1 (id, k, c, pad) VALUES (5, 5, 'again', '')")
			require.Equal(t, uint16(1062), mysqlErr(err), "%v", err)
			exec(t, a, "DELETE FROM sbtest1 WHERE id=5")
			b := conn(t, db)
			done := make(chan error, 1)
			go func() {
				_, err := b.ExecContext(context.Background(), "INSERT INTO sbtest1 (id, k, c, pad) VALUES (5, 5, 'b', '')")
				done <- err
			}()
			<-ts.waits // b waits for a's lock on the deleted row
			exec(t, a, "ROLLBACK")
			err = <-done
			require.Equal(t, uint16(1062), mysqlErr(err), "the rollback brought the row back: %v", err)
			require.Equal(t, [][]string{{"c5"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=5"))
		})
	}
}

// TestDisconnect: a client that goes away while its statement waits for
// a lock, or while idle in a transaction, has its wait ended, its
// transaction rolled back and its locks released.
func TestDisconnect(t *testing.T) {
	ts, dsn := startServer(t, engine.Options{Lock: engine.LockRange})
	db := loadSbtest(t, dsn, 10)
	a := begin(t, db)
	exec(t, a, "UPDATE sbtest1 SET c='a' WHERE id=1")

	// A waiting client: its driver closes the socket when its context ends.
	waiter := open(t, dsn("sbtest"))
	w := begin(t, waiter)
	exec(t, w, "UPDATE sbtest1 SET c='w' WHERE id=2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.ExecContext(ctx, "UPDATE sbtest1 SET c='w' WHERE id=1")
		done <- err
	}()
	<-ts.waits
	cancel()
	require.Error(t, <-done)

	// An idle client in a transaction holding id 3.
	idle := open(t, dsn("sbtest"))
	i := begin(t, idle)
	exec(t, i, "UPDATE sbtest1 SET c='i' WHERE id=3")
	i.Close()
	idle.Close()

	// Both rows come free (these lock requests wait for the rollbacks).
	c := begin(t, db)
	require.Equal(t, [][]string{{"c2"}, {"c3"}}, queryRows(t, c, "SELECT c FROM sbtest1 WHERE id IN (2, 3) FOR UPDATE"))
	exec(t, c, "COMMIT")
	exec(t, a, "COMMIT")
	require.Equal(t, int64(0), status(t, db, "Txnlock_current_locks"))
}

// TestKillQuery: KILL QUERY ends a waiting statement with 1317 and leaves
// its transaction open; SHOW PROCESSLIST shows it while it waits.
func TestKillQuery(t *testing.T) {
	ts, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 10)
	a, b := begin(t, db), begin(t, db)
	exec(t, a, "UPDATE sbtest1 SET c='a' WHERE id=1")
	exec(t, b, "UPDATE sbtest1 SET c='b' WHERE id=2")
	var bid string
	require.NoError(t, b.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&bid))
	done := make(chan error, 1)
	go func() {
		_, err := b.ExecContext(context.Background(), "UPDATE sbtest1 SET c='b' WHERE id=1")
		done <- err
	}()
	<-ts.waits
	var info string
	for _, r := range queryRows(t, db, "SHOW FULL PROCESSLIST") {
		if r[0] == bid {
			info = r[7]
		}
	}
	require.Equal(t, "UPDATE sbtest1 SET c='b' WHERE id=1", info)
	exec(t, db, "KILL QUERY "+bid)
	require.Equal(t, uint16(1317), mysqlErr(<-done))
	exec(t, b, "COMMIT")
	exec(t, a, "COMMIT")
	require.Equal(t, [][]string{{"a"}, {"b"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id IN (1, 2)"))
}

// TestImplicitCommit: BEGIN and DDL commit an open transaction, as MySQL's
// do; ROLLBACK after them has nothing to undo.
func TestImplicitCommit(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 10)
	c := begin(t, db)
	exec(t, c, "UPDATE sbtest1 SET c='x' WHERE id=1")
	exec(t, c, "BEGIN")
	exec(t, c, "UPDATE sbtest1 SET c='y' WHERE id=2")
	exec(t, c, "CREATE TABLE t2 (id INT PRIMARY KEY)")
	exec(t, c, "ROLLBACK")
	require.Equal(t, [][]string{{"x"}, {"y"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id IN (1, 2)"))
	// autocommit=0: statements stay in a transaction until COMMIT.
	exec(t, c, "SET autocommit=0")
	exec(t, c, "UPDATE sbtest1 SET c='z' WHERE id=3")
	require.Equal(t, [][]string{{"c3"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=3"))
	exec(t, c, "ROLLBACK")
	require.Equal(t, [][]string{{"c3"}}, queryRows(t, db, "SELECT c FROM sbtest1 WHERE id=3"))
	exec(t, c, "SET autocommit=1")
}

// TestUnsupported: what the server does not run fails with 1235 naming
// it, never a silent success.
func TestUnsupported(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := loadSbtest(t, dsn, 3)
	for q, name := range map[string]string{
		"SELECT * FROM sbtest1 a JOIN sbtest1 b ON a.id=b.id": "joins",
		"SAVEPOINT a":                                          "SAVEPOINT",
		"SET GLOBAL autocommit=0":                              "SET GLOBAL",
		"SELECT k, COUNT(*) FROM sbtest1 GROUP BY k":           "GROUP BY",
		"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE": "SERIALIZABLE",
		"CREATE TABLE f (x FLOAT)":                             "FLOAT",
		"REPLACE INTO sbtest1 VALUES (1, 1, '', '')":           "REPLACE",
		"TRUNCATE TABLE sbtest1":                               "TRUNCATE",
	} {
		_, err := db.Exec(q)
		require.Equal(t, uint16(1235), mysqlErr(err), "%s: %v", q, err)
		require.True(t, strings.Contains(strings.ToUpper(err.Error()), strings.ToUpper(name)), "%s: %v", q, err)
	}
	_, err := db.Exec("SET no_such_variable=1")
	require.Equal(t, uint16(1193), mysqlErr(err))
}
