// Package sbtest is sysbench's sbtest toy table on Pebble, with
// pessimistic transactions from pebbletxn and locks from a txnlock manager:
// the table the benchmarks and the end-to-end tests run real statements
// against.
//
//	db, err := sbtest.Open(sbtest.Options{TableSize: 10000, Lock: sbtest.LockRange}) // in memory
//	if err != nil { ... }
//	defer db.Close()
//	err = db.Prepare(ctx) // sysbench's prepare: rows 1..TableSize
//	tx := db.Begin()
//	n, err := tx.UpdateIndex(ctx, 1, 7) // UPDATE sbtest1 SET k=k+1 WHERE id=7: locks, then writes
//	err = tx.Commit()                   // or tx.Rollback(); either releases the locks
//	report, err := db.Verify()          // every row and index entry consistent?
//
// # Schema and storage
//
//	CREATE TABLE sbtestN (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60),
//	                      KEY k_1 (k))        -- k_1 left out with Options.NoSK
//
// Tables sbtest1 … sbtestN live in one Pebble DB, in memory (vfs.NewMem,
// MyRocks' benchmark's /dev/shm datadir; the default) or in Options.Dir. The WAL is
// always on; Options.Sync makes each commit wait for its fsync (the
// benchmarks use NoSync, as the RocksDB comparison runs with sync=false). A
// row is a PK entry and, with the index, an SK entry:
//
//	PK  't' table 'p' id     → k, c, pad
//	SK  't' table 'k' k id   → ""
//
// Column-family layouts (each column family is a key prefix with its own
// lock map or locktree in the manager):
//
//	shared      every table and index in the default column family
//	per-table   "sbtestN": the PK and SK of one table together
//	per-index   "sbtestN.PRIMARY" and "sbtestN.k_1" (MyRocks' make-4-cfs.sql)
//
// # The life of a transaction
//
//	db.Begin() ─▶ pebbletxn.Txn (an indexed batch + a record of held locks)
//	   │
//	   │  UPDATE sbtest1 SET k=k+1 WHERE id=5
//	   ▼
//	 lock PK 5 (X) ──▶ manager ──(wait / timeout / deadlock victim)
//	 read row 5 through the batch (own writes first, then committed data)
//	 range locking: lock SK (k,5) and SK (k+1,5) (X, single-key ranges)
//	 write PK 5, delete SK (k,5), put SK (k+1,5) into the batch (untracked:
//	    the locks above are the statement's whole locking)
//	   │
//	   ▼  … more statements; a lock already held (≥ mode) is not re-sent …
//	Commit ─▶ Pebble applies the batch atomically (WAL, fsync if Sync)
//	       ─▶ manager.UnlockAll: waiters on our keys proceed
//	Rollback ─▶ batch discarded, UnlockAll
//
// A statement takes all of its locks before it writes, so a statement that
// fails leaves the transaction's batch as before it, and after Rollback
// the committed tables are untouched.
//
// # Locking rules (MyRocks's), lock requests sent per statement
//
//	statement                   point         range                       table      none
//	PointSelect                 -             -                           T(X)       -
//	SelectForUpdate / ForShare  PK(X/S)       PK(X/S)                     T(X)       -
//	UpdateIndex (k=k+1)         PK(X)         PK, SK old, SK new (X)      T(X)       -
//	UpdateNonIndex (c)          PK(X)         PK(X)                       T(X)       -
//	Delete                      PK(X)         PK, SK (X)                  T(X)       -
//	Insert                      PK(X)         PK, SK new (X)              T(X)       -
//	InsertAuto, AutoIncMode 0   + AI(X) released at the end of the statement (not with none)
//	RangeSelect                 -             -                           T(X)       -
//	RangeSelect FOR UPDATE      PK(X) each    the range [lo, hi] (X)      T(X)       -
//	                            row found
//
// Lock point-sk is point with range's PK and SK columns: the SK entries
// a statement writes are point-locked too (InnoDB locks the index records
// it modifies), and RangeSelect FOR UPDATE locks each row found. For
// oltp_write_only it sends the requests range does, to a point manager:
// range against point-sk compares the two managers alone (the RocksDB
// comparison's point+sk mode makes the same comparison).
//
// PK, SK: a point lock on the entry's key (a single-key range under range
// locking). T: the table lock, one per table per transaction. AI: the
// table's AUTO-INC lock. "-": no lock. Without the SK index the SK locks
// are not taken. pebbletxn never re-sends a lock the transaction holds in
// a covering mode, under any manager.
//
// Phantoms: under point locking a RangeSelect FOR UPDATE locks the rows it
// found, so another transaction can insert a new id into the range and a
// second scan sees it. Range locking locks the range, so that insert waits
// until the scanning transaction ends. This is the price point locking
// pays for fewer, cheaper lock requests; MyRocks makes the same trade.
//
// Lock none takes no lock at all: concurrent writers lose updates and can
// leave a row without its SK entry. It exists to measure the storage and
// driver cost alone.
//
// # Lock requests per oltp_write_only transaction
//
// UPDATE k=k+1 (id1); UPDATE c (id2); DELETE (id3); INSERT (id3, same k or
// not); COMMIT — with distinct ids:
//
//	                         txnlock   MyRocks
//	point                    3         3   the INSERT reuses the DELETE's PK lock
//	range                    7         8   MyRocks re-sends the INSERT's PK lock
//	range, no SK             3         4   the same re-send
//	point-sk                 7         -   range's requests, to pointlock
//
// Range: 3 (UPDATE k) + 1 (UPDATE c) + 2 (DELETE) + 1 (INSERT: its new SK
// entry; the PK lock is held already). If the INSERT reuses the deleted
// row's k, its SK lock is held already too and the count is 6.
//
// # Auto-increment (InsertAuto)
//
// InnoDB's innodb_autoinc_lock_mode: 0 traditional takes the table's
// AUTO-INC lock through the manager, exclusive, and releases it at the end
// of the statement (so it serializes inserts into a table and its waits
// and deadlocks are real lock waits); 1 consecutive allocates under a
// mutex; 2 interleaved with an atomic add. For the single-row inserts this
// table runs, 1 and 2 differ only in that cost. Counters start after the
// greatest id at Open and after Prepare.
//
// # Beyond the table
//
// Options has Manager (use a caller's manager; it is not closed), and
// CacheSize and MemTableSize (Pebble sizes; RocksDB's defaults). DB adds
// Options, Manager and TxnDB; Tx adds ID and UpdateIndexBy (k=k+delta,
// locked as UpdateIndex). VerifyReport counts Rows, SKEntries, Missing and
// Extra; duplicate ids cannot exist because ids are keys.
//
// # Errors
//
// Lock errors come from the manager unchanged: test errors.Is(err,
// txnlock.ErrDeadlock) and errors.Is(err, txnlock.ErrLockNotGranted), and
// roll the transaction back. sbtest adds ErrDuplicateKey (an insert of an
// id that exists), ErrNotEmpty (Prepare over rows) and ErrInconsistent
// (Verify), and bad options are a *txnlock.OptionsError listing every
// problem.
package sbtest

// For maintainers: the additions listed under "Beyond the table" are this
// package's deviations from the driver contract in sbtest_api.md. (This
// comment is not the package doc; go doc does not show it.)
