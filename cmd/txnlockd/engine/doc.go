// Package engine is txnlockd's storage: databases and tables on one
// Pebble store, with pessimistic transactions from pebbletxn and locks
// from a txnlock manager (pointlock for LockPoint and LockPointSK,
// rangelock for LockRange) and a deadlock detector.
//
//	e, err := engine.Open(engine.Options{Lock: engine.LockRange}) // in memory
//	if err != nil { ... }
//	defer e.Close()
//	err = e.CreateDatabase("sbtest", false)
//	err = e.CreateTable(&engine.Table{DB: "sbtest", Name: "t", Columns: cols, Key: 0}, false)
//	t, _ := e.Table("sbtest", "t")
//	txn, err := e.Begin(0)
//	row, found, err := txn.Get(ctx, t, 7, engine.UpdateLock) // locks key 7, then reads
//	err = txn.Update(ctx, t, []engine.Change{{Key: 7, Old: row, New: newRow}})
//	err = txn.Commit()
//
// # Storage
//
// A table is rows under its clustered key (an integer) and, per secondary
// index, entries of the indexed values followed by the key; the schema is
// JSON in a catalog in the same store. A column family layout puts every
// table in the default column family, each table in its own, or each
// index in its own (a column family is also a lock map or locktree in the
// manager). With a directory, schemas, rows and the AUTO_INCREMENT
// counters (the greatest key of each table) survive a restart.
//
// # Locks
//
// Reads lock before they read; writes lock every index entry they will
// touch before writing anything, so a statement that fails leaves its
// transaction's writes as they were. Txn's methods say what each locks
// under each kind; the server package has the table per statement.
//
// # DDL
//
// CREATE/DROP DATABASE, CREATE/DROP TABLE and CREATE/DROP INDEX are
// serialized and publish an immutable catalog that statements read
// without a lock. They do not wait for open transactions: CREATE INDEX
// backfills the committed rows and then publishes the index, so a writer
// that commits across it can leave its rows out of the index. Run DDL, as
// sysbench's prepare does, with no writers on the table.
package engine
