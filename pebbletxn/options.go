package pebbletxn

import (
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// Options configure a DB. The zero value is not usable: Manager is
// required. Call EnsureDefaults, then Validate (New does both).
type Options struct {
	// Manager is the lock manager every transaction of this DB locks
	// through: a pointlock.Manager, a rangelock.Manager or any other
	// txnlock.Manager. The DB registers its column families with it and
	// never closes it. Required; default: none.
	Manager txnlock.Manager
	// RangeLocking says that Manager can lock ranges of keys (rangelock).
	// With it, ScanForUpdate locks the scanned range itself, so an insert
	// into a gap of the range waits until the scanning transaction ends,
	// and LockRange is allowed. Without it ScanForUpdate locks each key it
	// reads (phantoms possible) and LockRange of more than one key fails
	// with txnlock.ErrRangeNotSupported. Default: false.
	RangeLocking bool
	// LockTimeout is the lock-wait timeout of transactions that do not set
	// their own: txnlock.DefaultTimeout uses the manager's LockTimeout,
	// txnlock.NoWait fails at once, txnlock.WaitForever never times out.
	// Default: txnlock.DefaultTimeout (0, the manager's).
	LockTimeout time.Duration
	// Sync makes a Commit return only once its batch is synced to the WAL
	// on stable storage, so that it survives a process crash, an OS crash
	// and a power loss. Without it a Commit returns once the batch is in
	// the memtable and in Pebble's WAL buffer in the process's memory
	// (RocksDB's sync=false, with the buffer in the process): a process
	// crash as well as an OS crash or power loss may lose the last
	// commits, never part of one, and what survives is a prefix of the
	// commits in order (see Durability in the package doc).
	// Transactions may override it. Default: false.
	Sync bool
}

// EnsureDefaults fills zero fields with their defaults. Every default of
// Options is its zero value, so this does nothing today; it is kept so that
// callers follow the Pebble pattern and future fields get defaults.
func (o *Options) EnsureDefaults() {}

// Validate reports every problem with o.
func (o *Options) Validate() error {
	var p optcheck.Problems
	if o.Manager == nil {
		p.Addf("Manager is nil")
	}
	if _, err := optcheck.ResolveTimeout(o.LockTimeout, 0, false); err != nil {
		p.Addf("LockTimeout %v is negative (use txnlock.NoWait or txnlock.WaitForever)", o.LockTimeout)
	}
	return p.Err()
}

// String renders the options on one line.
func (o Options) String() string {
	return fmt.Sprintf("manager=%T range_locking=%t lock_timeout=%v sync=%t",
		o.Manager, o.RangeLocking, o.LockTimeout, o.Sync)
}

// Durability says whether a commit waits for the WAL fsync.
type Durability uint8

const (
	// DefaultDurability follows Options.Sync.
	DefaultDurability Durability = iota
	// SyncDurability: Commit returns once the batch is on stable storage.
	SyncDurability
	// NoSyncDurability: Commit returns once the batch is in the memtable
	// and in Pebble's WAL buffer, in the process's memory, not yet in the
	// OS: a process crash may lose it (and the commits after it).
	NoSyncDurability
)

// String renders "default", "sync" or "nosync".
func (d Durability) String() string {
	switch d {
	case DefaultDurability:
		return "default"
	case SyncDurability:
		return "sync"
	case NoSyncDurability:
		return "nosync"
	}
	return fmt.Sprintf("Durability(%d)", uint8(d))
}

// TxnOptions configure one transaction. The zero value uses the DB's
// settings.
type TxnOptions struct {
	// LockTimeout as in Options.LockTimeout. Default: txnlock.DefaultTimeout
	// (0), which uses Options.LockTimeout.
	LockTimeout time.Duration
	// Durability of the commit. Default: DefaultDurability (Options.Sync).
	Durability Durability
}

// Validate reports every problem with o.
func (o *TxnOptions) Validate() error {
	var p optcheck.Problems
	if _, err := optcheck.ResolveTimeout(o.LockTimeout, 0, false); err != nil {
		p.Addf("LockTimeout %v is negative (use txnlock.NoWait or txnlock.WaitForever)", o.LockTimeout)
	}
	if o.Durability > NoSyncDurability {
		p.Addf("unknown %v", o.Durability)
	}
	return p.Err()
}
