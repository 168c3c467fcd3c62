package bench

import (
	"context"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/bench/sbtest"
)

// LockKind names how the table locks rows: "point" (pointlock.Manager on
// primary-key entries), "range" (rangelock.Manager, also secondary-key
// entries and scanned ranges), "point-sk" (pointlock.Manager, also
// secondary-key entries: range's requests for writes), "table" (one
// exclusive lock per table per transaction) or "none" (no locks: unsafe for
// concurrent writers, measures the storage and the driver alone). It is bench/sbtest's, which defines
// the rules; every Opener reads it the same way.
type LockKind = sbtest.LockKind

// The lock kinds.
const (
	LockPoint = sbtest.LockPoint
	LockRange = sbtest.LockRange
	// LockPointSK: pointlock.Manager sent range's requests (the SK entries
	// too), to compare the managers without the protocol's difference.
	LockPointSK = sbtest.LockPointSK
	LockTable   = sbtest.LockTable
	LockNone    = sbtest.LockNone
)

// lockKinds lists every lock kind, in the order reports use.
var lockKinds = []LockKind{LockPoint, LockRange, LockPointSK, LockTable, LockNone}

// Layout says how tables and indexes map to column families: "shared" (one
// column family), "per-table" or "per-index" (MyRocks' make-4-cfs.sql).
// It is bench/sbtest's.
type Layout = sbtest.Layout

// The column-family layouts.
const (
	LayoutShared   = sbtest.LayoutShared
	LayoutPerTable = sbtest.LayoutPerTable
	LayoutPerIndex = sbtest.LayoutPerIndex
)

// layouts lists every layout.
var layouts = []Layout{LayoutShared, LayoutPerTable, LayoutPerIndex}

// Storage says where the table lives: "mem" (Pebble on an in-memory file
// system, like MyRocks' /dev/shm datadir) or "disk".
type Storage string

// The storages.
const (
	StorageMem  Storage = "mem"
	StorageDisk Storage = "disk"
)

// TableConfig is what the driver asks an Opener for: a freshly prepared
// table in the given shape.
type TableConfig struct {
	Tables      int      // sbtest1..sbtestN
	TableSize   int      // rows per table after prepare
	Layout      Layout   // column-family layout
	NoSK        bool     // no secondary index on k
	Storage     Storage  // mem or disk
	Dir         string   // parent directory for disk storage ("" = os.TempDir())
	Sync        bool     // commits fsync the WAL
	Lock        LockKind // locking rule
	AutoIncMode int      // InnoDB innodb_autoinc_lock_mode: 0, 1 or 2
	LockTimeout time.Duration
	TimeLocks   bool // time the lock calls (RunResult.LockTime)
}

// Opener opens and prepares a fresh table. The driver closes it after the
// run; Close removes whatever the table left on disk.
type Opener func(ctx context.Context, cfg TableConfig) (DB, error)

// DB is the table as the driver sees it: the part of bench/sbtest's DB
// that workloads need, so that the driver, its reports and its accounting
// can be tested against a fake.
type DB interface {
	// Begin starts a transaction.
	Begin() Tx
	// Verify checks the table: every primary-key row has its secondary-key
	// entry and vice versa, and no id appears twice.
	Verify() (VerifyReport, error)
	// LockStats sums the counters of the table's lock managers.
	LockStats() txnlock.Stats
	// DeadlockStats returns the shared deadlock detector's counters.
	DeadlockStats() DeadlockStats
	// Close closes the table and removes its files.
	Close() error
}

// Tx is one transaction: the statements of sysbench's and mysqlslap's
// workloads. Tables are numbered from 1. Statements return the rows they
// sent or affected. Lock errors (txnlock.ErrDeadlock, ErrLockTimeout) come
// back unchanged; the driver then rolls the transaction back.
type Tx interface {
	// PointSelect: SELECT c FROM sbtestT WHERE id=?
	PointSelect(ctx context.Context, table int, id int64) (int, error)
	// RangeSelect: SELECT c FROM sbtestT WHERE id BETWEEN lo AND hi, both
	// ends inclusive, FOR UPDATE if forUpdate.
	RangeSelect(ctx context.Context, table int, lo, hi int64, forUpdate bool) (int, error)
	// UpdateIndex: UPDATE sbtestT SET k=k+1 WHERE id=?
	UpdateIndex(ctx context.Context, table int, id int64) (int, error)
	// UpdateNonIndex: UPDATE sbtestT SET c=? WHERE id=?
	UpdateNonIndex(ctx context.Context, table int, id int64, c string) (int, error)
	// Delete: DELETE FROM sbtestT WHERE id=?
	Delete(ctx context.Context, table int, id int64) (int, error)
	// Insert: INSERT INTO sbtestT (id, k, c, pad) VALUES (...); an
	// existing id is an error.
	Insert(ctx context.Context, table int, id, k int64, c, pad string) error
	// InsertAuto: INSERT INTO sbtestT (k, c, pad) VALUES (...) with an
	// auto-increment id, which it returns.
	InsertAuto(ctx context.Context, table int, k int64, c, pad string) (int64, error)
	// Commit applies the writes and releases the locks.
	Commit() error
	// Rollback discards the writes and releases the locks.
	Rollback() error
	// LockRequests is the number of lock requests sent to the lock
	// manager by this transaction so far.
	LockRequests() int
	// LockTime is the time spent inside its lock calls so far, if the
	// table was opened with TableConfig.TimeLocks; else 0.
	LockTime() time.Duration
}

// VerifyReport is the table check after a run.
type VerifyReport struct {
	Rows         int64    // primary-key rows found
	DuplicateIDs int64    // ids found more than once
	Problems     []string // empty: consistent
}

// OK reports whether the check found no problem.
func (v VerifyReport) OK() bool { return len(v.Problems) == 0 && v.DuplicateIDs == 0 }

// DeadlockStats are the deadlock detector's counters that reports show.
type DeadlockStats struct {
	Deadlocks uint64 // real cycles found (victims chosen)
	Trips     uint64 // searches that hit a limit (circuit breaker trips)
	Deferred  uint64 // trips handed to the background pass (the default policy)
	Assumed   uint64 // trips reported as deadlocks (assume-deadlock policy)
}

// Sub returns s - o (counters since o).
func (s DeadlockStats) Sub(o DeadlockStats) DeadlockStats {
	return DeadlockStats{Deadlocks: s.Deadlocks - o.Deadlocks, Trips: s.Trips - o.Trips, Deferred: s.Deferred - o.Deferred, Assumed: s.Assumed - o.Assumed}
}
