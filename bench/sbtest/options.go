package sbtest

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// LockKind says how statements lock (see the rules table in the package doc).
type LockKind string

// The lock kinds.
const (
	// LockPoint: pointlock.Manager; primary-key entries only (MyRocks
	// default). Range scans FOR UPDATE lock each row read: phantoms.
	LockPoint LockKind = "point"
	// LockRange: rangelock.Manager; primary-key entries, the old and new
	// secondary-key entries as single-key ranges, and the scanned range of
	// a FOR UPDATE range select (MyRocks rocksdb_use_range_locking=1).
	LockRange LockKind = "range"
	// LockPointSK: pointlock.Manager with range locking's point rules:
	// primary-key entries and the secondary-key entries a statement
	// writes, as InnoDB locks the index records it modifies; range scans
	// FOR UPDATE lock each row read, as LockPoint. It sends the manager
	// the same requests for oltp_write_only as LockRange, so the two
	// compare the managers alone, without the difference in protocol.
	LockPointSK LockKind = "point-sk"
	// LockTable: one exclusive lock per table per transaction, through a
	// pointlock.Manager (the MyISAM analog).
	LockTable LockKind = "table"
	// LockNone: no locks at all. Measures storage and driver cost alone;
	// concurrent writers lose updates and can corrupt the secondary index.
	LockNone LockKind = "none"
)

// LocksRows reports whether l locks rows (and ranges) through the manager:
// point, range and point-sk.
func (l LockKind) LocksRows() bool {
	return l == LockPoint || l == LockRange || l == LockPointSK
}

// LocksSK reports whether l locks the secondary-key entries it writes:
// range and point-sk.
func (l LockKind) LocksSK() bool { return l == LockRange || l == LockPointSK }

// Layout says how tables and indexes map to column families.
type Layout string

// The column-family layouts.
const (
	// LayoutShared: every table and index in the default column family.
	LayoutShared Layout = "shared"
	// LayoutPerTable: one column family per table, "sbtestN".
	LayoutPerTable Layout = "per-table"
	// LayoutPerIndex: one per index, "sbtestN.PRIMARY" and "sbtestN.k_1"
	// (MyRocks' make-4-cfs.sql).
	LayoutPerIndex Layout = "per-index"
)

// Defaults. The Pebble sizes are RocksDB 7.8's defaults (a 64 MB write
// buffer, a 32 MB block cache), which the RocksDB comparison runs with; Pebble's
// own (4 MB memtable, 8 MB cache) make a 10000-row table churn through
// flushes and compactions, and reads miss the cache and decompress blocks.
const (
	DefaultTables       = 1
	DefaultTableSize    = 10000
	DefaultCacheSize    = 32 << 20
	DefaultMemTableSize = 64 << 20
)

// Options configure a DB. Call EnsureDefaults, then Validate (Open does
// both).
type Options struct {
	// Tables is the number of tables, sbtest1..sbtestN. Default: 1.
	Tables int
	// TableSize is the number of rows per table Prepare loads. Default:
	// 10000.
	TableSize int
	// Layout of column families. Default: LayoutShared.
	Layout Layout
	// NoSK leaves out the secondary index on k. Default: false.
	NoSK bool
	// Dir is the Pebble directory; "" keeps the DB in memory (vfs.NewMem).
	// Default: "".
	Dir string
	// FS is the filesystem Dir is on, for tests of crashes and failing
	// disks (vfs.NewCrashableMem, errorfs). Default: nil, vfs.Default, or
	// a fresh vfs.NewMem when Dir is "".
	FS vfs.FS
	// Sync makes every commit wait for its WAL fsync (otherwise the WAL is
	// written without fsync, as the RocksDB comparison's sync=false). The WAL
	// is always on. Default: false.
	Sync bool
	// Lock is the lock kind. Default: LockPoint.
	Lock LockKind
	// AutoIncMode is InnoDB's innodb_autoinc_lock_mode for InsertAuto:
	// 0 traditional (a table AUTO-INC lock through the manager, held to the
	// end of the statement), 1 consecutive (a mutex around the counter),
	// 2 interleaved (an atomic counter). Default: 0.
	AutoIncMode int
	// LockTimeout is the manager's lock-wait timeout. Default:
	// txnlock.DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// Detector is the deadlock detector the manager reports waits to.
	// Default: nil, and Open makes one (deadlock.New with its defaults)
	// which Close closes.
	Detector txnlock.Detector
	// Manager replaces the manager Open would build for Lock (it must lock
	// ranges when Lock is LockRange). The DB does not close it. Default:
	// nil.
	Manager txnlock.Manager
	// PebbleLogger turns Pebble's own logging on. Default: false (quiet).
	PebbleLogger bool
	// CacheSize is Pebble's block cache, in bytes. Default:
	// DefaultCacheSize (32 MB).
	CacheSize int64
	// MemTableSize is Pebble's memtable size, in bytes. Default:
	// DefaultMemTableSize (64 MB).
	MemTableSize uint64
	// TimeLocks makes each Tx add up the time spent inside its lock
	// calls (Tx.LockTime), at the cost of two clock reads per call.
	// ScanForUpdate, which locks and reads in one call, is not counted.
	// Default: false.
	TimeLocks bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Tables == 0 {
		o.Tables = DefaultTables
	}
	if o.TableSize == 0 {
		o.TableSize = DefaultTableSize
	}
	if o.Layout == "" {
		o.Layout = LayoutShared
	}
	if o.Lock == "" {
		o.Lock = LockPoint
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = txnlock.DefaultLockTimeout
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
}

// Validate reports every problem with o.
func (o *Options) Validate() error {
	var p optcheck.Problems
	if o.Tables < 1 || o.Tables > 1<<20 {
		p.Addf("Tables %d is not in [1, %d]", o.Tables, 1<<20)
	}
	if o.TableSize < 0 {
		p.Addf("TableSize %d is negative", o.TableSize)
	}
	switch o.Layout {
	case LayoutShared, LayoutPerTable, LayoutPerIndex:
	default:
		p.Addf("unknown Layout %q", o.Layout)
	}
	switch o.Lock {
	case LockPoint, LockRange, LockPointSK, LockTable, LockNone:
	default:
		p.Addf("unknown Lock %q", o.Lock)
	}
	if o.AutoIncMode < 0 || o.AutoIncMode > 2 {
		p.Addf("AutoIncMode %d is not 0, 1 or 2", o.AutoIncMode)
	}
	if o.LockTimeout < 0 && o.LockTimeout != txnlock.NoWait {
		p.Addf("LockTimeout %v is negative (use txnlock.NoWait or txnlock.WaitForever)", o.LockTimeout)
	}
	if o.CacheSize < 0 {
		p.Addf("CacheSize %d is negative", o.CacheSize)
	}
	if o.MemTableSize >= 4<<30 {
		p.Addf("MemTableSize %d is not below 4 GB", o.MemTableSize)
	}
	return p.Err()
}

// String renders the options on one line.
func (o Options) String() string {
	dir := o.Dir
	if dir == "" {
		dir = "mem"
	}
	return fmt.Sprintf("tables=%d table_size=%d layout=%s no_sk=%t dir=%s sync=%t lock=%s autoinc_mode=%d lock_timeout=%v detector=%t manager=%t pebble_logger=%t cache_size=%d memtable_size=%d",
		o.Tables, o.TableSize, o.Layout, o.NoSK, dir, o.Sync, o.Lock, o.AutoIncMode, o.LockTimeout, o.Detector != nil, o.Manager != nil, o.PebbleLogger, o.CacheSize, o.MemTableSize)
}
