package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
)

// slapTable is mysqlslap's auto-generated table with
// --auto-generate-sql-add-autoincrement: id SERIAL, rewritten to BIGINT
// UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE, the clustered key.
const slapTable = "CREATE TABLE `t1` (id serial,intcol1 INT(32) ,charcol1 VARCHAR(128))"

// TestSlapLoads: mysqlslap's statements, from concurrent clients in each
// AUTO-INC mode: every insert gets a unique id, reads and updates by id
// work, and no deadlock is reported.
func TestSlapLoads(t *testing.T) {
	for mode := 0; mode <= 2; mode++ {
		for _, lock := range []engine.LockKind{engine.LockPoint, engine.LockRange} {
			t.Run(fmt.Sprintf("%s/autoinc=%d", lock, mode), func(t *testing.T) {
				_, dsn := startServer(t, engine.Options{Lock: lock, AutoIncMode: mode})
				root := open(t, dsn(""))
				exec(t, root, "DROP SCHEMA IF EXISTS `mysqlslap`")
				exec(t, root, "CREATE SCHEMA `mysqlslap`")
				db := open(t, dsn("mysqlslap"))
				exec(t, db, slapTable+"\x00") // mysqlslap ends its statements with a NUL
				const clients, each = 8, 25
				var wg sync.WaitGroup
				errs := make(chan error, clients*each)
				for c := 0; c < clients; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < each; i++ {
							r, err := db.Exec(fmt.Sprintf("INSERT INTO t1 VALUES (NULL,%d,'%s')", c*1000+i, "qMa5SuKo4M5OM7ldvisSc6WK9rsG9E8sSixocHdgfa5uiiNTGF"))
							if err == nil {
								var id int64
								if id, err = r.LastInsertId(); err == nil && id == 0 {
									err = fmt.Errorf("no insert id")
								}
								if err == nil {
									_, err = db.Exec(fmt.Sprintf("SELECT intcol1,charcol1 FROM t1 WHERE id =  '%d'", id))
								}
								if err == nil {
									_, err = db.Exec(fmt.Sprintf("UPDATE t1 SET intcol1 = %d,charcol1 = 'x' WHERE id =  '%d'", i, id))
								}
							}
							errs <- err
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				require.Equal(t, [][]string{{fmt.Sprint(clients * each), fmt.Sprint(clients * each), "1", fmt.Sprint(clients * each)}},
					queryRows(t, db, "SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM t1"))
				require.Equal(t, int64(0), status(t, db, "Txnlock_deadlock_errors"))
				exec(t, root, "DROP SCHEMA IF EXISTS `mysqlslap`")
			})
		}
	}
}

// TestRestart: on disk, schemas, rows, indexes and the AUTO_INCREMENT
// counter survive a restart.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	ts, dsn := startServer(t, engine.Options{Dir: dir, Layout: engine.LayoutPerTable})
	db := loadSbtest(t, dsn, 20)
	exec(t, db, "DELETE FROM sbtest1 WHERE id=20")
	db.Close()
	require.NoError(t, ts.Server.Close())

	srv, err := New(Options{Addr: "127.0.0.1:0", AllowEmptyRoot: true, Engine: engine.Options{Dir: dir, Layout: engine.LayoutPerTable}})
	require.NoError(t, err)
	go srv.Serve()
	defer srv.Close()
	db = open(t, "root@tcp("+srv.Addr().String()+")/sbtest")
	r := exec(t, db, "INSERT INTO sbtest1(k, c, pad) VALUES (7, 'after', 'restart')")
	id, err := r.LastInsertId()
	require.NoError(t, err)
	require.Equal(t, int64(20), id, "the counter starts after the greatest id")
	require.Equal(t, [][]string{{"20", "20"}}, queryRows(t, db, "SELECT COUNT(*), MAX(id) FROM sbtest1"))
	require.Equal(t, [][]string{{"sbtest", "sbtest1", "20", "k_1", "20", "0", "0"}}, queryRows(t, db, "SELECT * FROM txnlock.table_check"))
	require.Equal(t, [][]string{{"7", "c7"}, {"20", "after"}}, queryRows(t, db, "SELECT id, c FROM sbtest1 WHERE k = 7"))
}
