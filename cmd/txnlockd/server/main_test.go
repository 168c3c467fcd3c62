package server

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// vitess' static auth server installs a SIGHUP handler goroutine for
		// the life of the process, and its log package a flusher.
		goleak.IgnoreAnyFunction("vitess.io/vitess/go/mysql.(*AuthServerStatic).installSignalHandlers.func1"),
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
	)
}

// startServer starts a server on a free loopback port with root and no
// password, and returns it with a DSN for database db.
func startServer(t *testing.T, eo engine.Options) (*Server, func(db string) string) {
	t.Helper()
	srv, err := New(Options{Addr: "127.0.0.1:0", AllowEmptyRoot: true, Engine: eo})
	require.NoError(t, err)
	go srv.Serve()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv, func(db string) string {
		c := mysql.NewConfig()
		c.User, c.Net, c.Addr, c.DBName = "root", "tcp", srv.Addr().String(), db
		return c.FormatDSN()
	}
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	require.NoError(t, err, q)
	return r
}

func queryRows(t *testing.T, db interface {
	Query(string, ...any) (*sql.Rows, error)
}, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = "NULL"
			if v.Valid {
				r[i] = v.String
			}
		}
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestSmoke(t *testing.T) {
	_, dsn := startServer(t, engine.Options{})
	db := open(t, dsn(""))
	exec(t, db, "CREATE DATABASE sbtest")
	db2 := open(t, dsn("sbtest"))
	exec(t, db2, "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */")
	exec(t, db2, "INSERT INTO sbtest1(k, c, pad) VALUES(5, 'a', 'b'),(6,'c','d')")
	exec(t, db2, "CREATE INDEX k_1 ON sbtest1(k)")
	exec(t, db2, "UPDATE sbtest1 SET k=k+1 WHERE id=?", 1)
	fmt.Println(queryRows(t, db2, "SELECT id, k, c, pad FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", 1, 5))
	fmt.Println(queryRows(t, db2, "SELECT SUM(k), count(*) FROM sbtest1"))
	fmt.Println(queryRows(t, db2, "SELECT @@version_comment, DATABASE(), @@transaction_isolation"))
}
