package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
)

// LockKind says how statements lock, as lockbench's --lock.
type LockKind string

// The lock kinds.
const (
	// LockPoint: a point manager; row keys only (MyRocks' default).
	// Locking scans lock each row they read: phantoms.
	LockPoint LockKind = "point"
	// LockRange: a range manager; row keys, the index entries a statement
	// writes (as single-key ranges), and the scanned range of a locking
	// scan, gaps included (MyRocks with rocksdb_use_range_locking=1).
	LockRange LockKind = "range"
	// LockPointSK: a point manager with range's row and index-entry locks:
	// the index entries a statement writes are locked too; locking scans
	// lock each row read, as point.
	LockPointSK LockKind = "point-sk"
)

// locksIndex reports whether written index entries are locked.
func (l LockKind) locksIndex() bool { return l == LockRange || l == LockPointSK }

// Layout says how tables and indexes map to column families.
type Layout string

// The layouts.
const (
	// LayoutShared: every table and index in the default column family.
	LayoutShared Layout = "shared"
	// LayoutPerTable: one column family per table, "db.table".
	LayoutPerTable Layout = "per-table"
	// LayoutPerIndex: one per index, "db.table.PRIMARY" and
	// "db.table.INDEX" (MyRocks' make-4-cfs.sql).
	LayoutPerIndex Layout = "per-index"
)

// Options configure an Engine. The zero value is valid.
type Options struct {
	// Dir is the Pebble directory, where schemas, rows and (as the
	// greatest key) AUTO_INCREMENT counters survive a restart; "" keeps
	// everything in memory. Default: "".
	Dir string
	// Sync makes each commit wait for its WAL fsync. The WAL is always
	// written. Default: false.
	Sync bool
	// Lock is the lock kind. Default: LockPoint.
	Lock LockKind
	// Layout of column families; reopen a directory with the layout it
	// was made with. Default: LayoutShared.
	Layout Layout
	// AutoIncMode is InnoDB's innodb_autoinc_lock_mode: 0 traditional (the
	// table's AUTO-INC lock through the manager, held to the end of the
	// INSERT), 1 consecutive (a mutex; a multi-row INSERT gets consecutive
	// ids), 2 interleaved (an atomic counter per row). Default: 0.
	AutoIncMode int
	// LockTimeout is the default lock-wait timeout (a session's
	// innodb_lock_wait_timeout starts there). Default: 50s, InnoDB's.
	LockTimeout time.Duration
	// Detector configures the deadlock detector. Default: its defaults.
	Detector deadlock.Options
	// CacheSize is Pebble's block cache in bytes. Default: 32 MB.
	CacheSize int64
	// MemTableSize is Pebble's memtable size in bytes. Default: 64 MB.
	MemTableSize uint64
	// OnWait, if set, is called when a lock request of txn starts to wait
	// (as the detector hears of it), on the waiter's goroutine: tests
	// order their steps by it. Default: nil.
	OnWait func(txn txnlock.TxnID)
}

// DefaultLockTimeout is InnoDB's innodb_lock_wait_timeout.
const DefaultLockTimeout = 50 * time.Second

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Lock == "" {
		o.Lock = LockPoint
	}
	if o.Layout == "" {
		o.Layout = LayoutShared
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.CacheSize == 0 {
		o.CacheSize = 32 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
}

// Validate reports every problem with o.
func (o *Options) Validate() error {
	var errs []error
	switch o.Lock {
	case LockPoint, LockRange, LockPointSK:
	default:
		errs = append(errs, fmt.Errorf("unknown Lock %q (point, range, point-sk)", o.Lock))
	}
	switch o.Layout {
	case LayoutShared, LayoutPerTable, LayoutPerIndex:
	default:
		errs = append(errs, fmt.Errorf("unknown Layout %q (shared, per-table, per-index)", o.Layout))
	}
	if o.AutoIncMode < 0 || o.AutoIncMode > 2 {
		errs = append(errs, fmt.Errorf("AutoIncMode %d is not 0, 1 or 2", o.AutoIncMode))
	}
	if o.LockTimeout < 0 && o.LockTimeout != txnlock.NoWait {
		errs = append(errs, fmt.Errorf("LockTimeout %v is negative", o.LockTimeout))
	}
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("CacheSize %d is negative", o.CacheSize))
	}
	d := o.Detector
	d.EnsureDefaults()
	if err := d.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("txnlockd: invalid options: %w", errors.Join(errs...))
}

// String renders the options on one line.
func (o Options) String() string {
	dir := o.Dir
	if dir == "" {
		dir = "memory"
	}
	return fmt.Sprintf("dir=%s sync=%t lock=%s layout=%s autoinc_mode=%d lock_timeout=%v detector={%v}",
		dir, o.Sync, o.Lock, o.Layout, o.AutoIncMode, o.LockTimeout, o.Detector)
}
