package rangelock

import (
	"math/rand/v2"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/shell"
)

// Manager is the range lock manager (txnlock.Manager). It is safe for
// concurrent use.
type Manager struct {
	// sh is the column families, what each transaction holds and the
	// detector: what both managers share.
	sh    shell.Shell[family, *family]
	opts  Options
	clock txnlock.Clock
	kh    keytable.Hash // hashes point keys (see hashKey)
	seed  uint64        // hashes point keys to stripes with Options.fixedHash (see stripeOf)
	mask  uint64        // Stripes - 1
	mem   memBudget

	// queued, if set, is called by a request that has joined a queue,
	// with no latch held, before it waits: the contract tests order their
	// steps by it. Set before first use; immutable.
	queued func(txnlock.TxnID)
}

// New returns a Manager with the default column family registered. It
// applies EnsureDefaults to a copy of opts and returns the Validate error,
// if any.
func New(opts Options) (*Manager, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:  opts,
		clock: opts.Clock,
		seed:  rand.Uint64(),
		kh:    keytable.NewHash(),
		mask:  uint64(opts.Stripes - 1),
	}
	if opts.fixedHash {
		m.seed = 0
	}
	m.mem.init(opts.MaxLockMemory)
	m.sh.Init(opts.Stripes, func(cf txnlock.ColumnFamily, idx uint16) *family { return newFamily(m, cf, idx) },
		opts.Detector, lockCounter{m})
	return m, nil
}

// Options returns the options in use (defaults filled in).
func (m *Manager) Options() Options { return m.opts }

// AddColumnFamily registers cf (see txnlock.Manager).
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error { return m.sh.AddColumnFamily(cf) }

// DropColumnFamily forgets cf (see txnlock.Manager): ErrColumnFamilyInUse
// while any lock is held or requested in it, and for the default column
// family.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error { return m.sh.DropColumnFamily(cf) }

// Stats returns the manager's counters, summed over its column families
// and those dropped so far.
func (m *Manager) Stats() txnlock.Stats { return m.sh.Stats() }

// Close fails every waiter with ErrClosed, drops every lock, and makes
// every later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error { return m.sh.Close() }

// Retire marks f dropped, unless a lock is held or requested in it
// (shell.Family).
func (f *family) Retire(retired *txnlock.Stats) error {
	f.lockStripes()
	defer f.unlockStripes()
	if f.inUseLocked() {
		return txnlock.ErrColumnFamilyInUse
	}
	f.dead = txnlock.ErrUnknownColumnFamily
	f.addCountersLocked(retired)
	f.resetMemLocked()
	return nil
}
