package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
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

// testServer is a server on a free loopback port, root without a
// password; waits receives the transaction of every lock wait.
type testServer struct {
	*Server
	waits chan txnlock.TxnID
}

// startServer starts a test server.
func startServer(t *testing.T, eo engine.Options) (*testServer, func(db string) string) {
	t.Helper()
	ts := &testServer{waits: make(chan txnlock.TxnID, 64)}
	eo.OnWait = func(txn txnlock.TxnID) { ts.waits <- txn }
	srv, err := New(Options{Addr: "127.0.0.1:0", AllowEmptyRoot: true, Engine: eo})
	require.NoError(t, err)
	ts.Server = srv
	go srv.Serve()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return ts, func(db string) string {
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

// execer and querier are *sql.DB and *sql.Conn alike.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func exec(t *testing.T, db execer, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.ExecContext(context.Background(), q, args...)
	require.NoError(t, err, q)
	return r
}

func queryRows(t *testing.T, db querier, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
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

// status reads one SHOW STATUS counter.
func status(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var n string
	var v int64
	require.NoError(t, db.QueryRow("SHOW STATUS LIKE '"+name+"'").Scan(&n, &v))
	return v
}

// conn returns one connection of db (a session of its own).
func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// mysqlErr returns err's MySQL error number, or 0.
func mysqlErr(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// sbtestSchema is what sysbench's oltp_common.lua prepare sends.
const sbtestSchema = "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */"

// loadSbtest creates database sbtest with sbtest1 of n rows (k = id), its
// index k_1 made after the load, and returns a DB on it.
func loadSbtest(t *testing.T, dsn func(string) string, n int) *sql.DB {
	t.Helper()
	exec(t, open(t, dsn("")), "CREATE DATABASE sbtest")
	db := open(t, dsn("sbtest"))
	exec(t, db, sbtestSchema)
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 'c%d', 'pad%d')", i, i, i))
	}
	exec(t, db, "INSERT INTO sbtest1(k, c, pad) VALUES"+strings.Join(vals, ","))
	exec(t, db, "CREATE INDEX k_1 ON sbtest1(k)")
	return db
}
