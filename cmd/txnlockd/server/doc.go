// Package server is txnlockd's MySQL-protocol front end: vitess' go/mysql
// listener (handshake, mysql_native_password, COM_QUERY,
// COM_STMT_PREPARE/EXECUTE) and its sqlparser, over an engine of tables
// on Pebble locked by a txnlock manager. Unmodified clients drive it:
// sysbench's oltp_* and select_random_* scripts (with --db-ps-mode=auto
// and disable), mysqlslap's auto-generated loads, the mariadb shell, any
// driver.
//
//	srv, err := server.New(server.Options{
//		Addr:  "127.0.0.1:3306",
//		Users: map[string]string{"app": "secret"},
//		Engine: engine.Options{Lock: engine.LockRange},
//	})
//	if err != nil { ... }
//	go srv.Serve()
//	defer srv.Close()
//
// # The life of a statement
//
//	COM_QUERY text ─▶ SERIAL rewritten, parsed ─┐
//	COM_STMT_EXECUTE ─▶ the prepared AST + bound values
//	                                            ▼
//	digest (literals → ?) ─▶ its delay rule, if any (sleep)
//	                                            ▼
//	the session's transaction (BEGIN's, or a statement's own under autocommit)
//	                                            ▼
//	access path from WHERE: keys, key ranges, an index range, or the table
//	rows read; locking reads and UPDATE/DELETE lock what the path reads
//	UPDATE/DELETE/INSERT lock index entries, then write
//	                                            ▼
//	autocommit: commit (or roll back on error) ─▶ result, statistics
//
// While a statement runs longer than 50 ms the connection is watched: a
// client that disconnects, also while its statement waits for a lock, has
// the statement interrupted, its transaction rolled back and its locks
// released. A client that disconnects between statements is rolled back
// when the connection's read fails.
//
// # Locking (MyRocks' rules, as lockbench's)
//
//	statement                           point               range
//	SELECT                              -                   -
//	SELECT … FOR UPDATE / FOR SHARE     each row read X/S   the keys or key range read, gaps included
//	UPDATE / DELETE … WHERE             each row read X     the keys or key range read, gaps included
//	  + index entries written           - (point-sk: X)     old and new entries X
//	INSERT                              the new key X       the new key X + its index entries X
//	  AUTO_INCREMENT, innodb_autoinc_lock_mode 0: the table's AUTO-INC lock X to the end of the statement
//
// A lock the transaction holds in a covering mode is not requested again:
// an oltp_write_only transaction sends 3 requests under point locking and
// 7 under range and point-sk, as lockbench's. Reads see the latest
// committed rows and the transaction's own writes: READ COMMITTED, the
// only isolation level accepted.
//
// # Errors, as MySQL's
//
//	1213 (40001)  deadlock victim; its transaction rolled back
//	1205 (HY000)  lock wait timeout; its transaction rolled back (innodb_rollback_on_timeout)
//	3572 (HY000)  NOWAIT and the lock is taken; the transaction stays open
//	1317 (70100)  KILL QUERY; an autocommit statement's transaction rolled back
//	1235 (42000)  a statement, clause, type or function the server does not run, named
//	1062, 1146, 1049, 1054, 1064, 1193, …  as MySQL
//
// BEGIN and DDL commit an open transaction first, as MySQL's do.
//
// # What a DBA looks at
//
//	SHOW ENGINE INNODB STATUS                   the latest deadlock (the detector's history),
//	                                            the transactions, the lock counters
//	SHOW STATUS LIKE 'txnlock%'                 counters: 1213s and 1205s returned, commits,
//	                                            lock requests of committed transactions, …
//	SHOW [FULL] PROCESSLIST, KILL [QUERY] n
//	performance_schema.data_locks, data_lock_waits   from the manager's Status
//	information_schema.innodb_trx                    open transactions
//	stats.stats_mysql_query_digest              per digest: count, times, rows, errors, delay
//	txnlock.table_check                         per table and index: rows, entries, missing, extra
//
// Every one of them reads with SELECT (WHERE, ORDER BY, LIMIT).
//
// # What it does not do
//
// One table per statement (no joins, subqueries, GROUP BY), integer and
// string columns, one integer clustered key (the PRIMARY KEY, else the
// first UNIQUE NOT NULL integer column, else a hidden row id), non-unique
// secondary indexes, no savepoints, no SKIP LOCKED, no multi-statement
// queries. mysqlslap's "id serial" column is rewritten before parsing to
// BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE (MySQL's definition of
// SERIAL; vitess' grammar lacks it): a whole-token rewrite of an
// identifier serial right after a column name in CREATE TABLE.
package server
