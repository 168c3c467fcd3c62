package rangelock

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/shell"
)

// Manager is the range lock manager (txnlock.Manager). It is safe for
// concurrent use.
type Manager struct {
	opts Options
	det  detect.Graph // attached to Options.Detector; nil: no deadlock detection
	// finiteWaits: the detector needs every wait to end by a timeout.
	finiteWaits bool
	clock       txnlock.Clock
	kh          keytable.Hash // hashes point keys (see hashKey)
	seed        uint64        // hashes point keys to stripes with Options.fixedHash (see stripeOf)
	mask        uint64        // Stripes - 1

	closed atomic.Bool
	fams   shell.Families[family] // the column families
	txns   shell.Records          // what each transaction holds
	mem    memBudget

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
	m.txns = shell.NewRecords(opts.Stripes)
	m.fams.Init(func(idx uint16) *family { return newFamily(m, txnlock.DefaultColumnFamily, idx) })
	if opts.Detector != nil {
		d := opts.Detector.Seam()
		m.det = d.Attach(lockCounter{m})
		m.finiteWaits = d.FiniteWaits()
	}
	return m, nil
}

// Options returns the options in use (defaults filled in).
func (m *Manager) Options() Options { return m.opts }

// AddColumnFamily registers cf (see txnlock.Manager).
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error {
	m.fams.Mu.Lock()
	defer m.fams.Mu.Unlock()
	if m.closed.Load() {
		return lockErr("add-column-family", txnlock.Request{CF: cf}, nil, txnlock.ErrClosed)
	}
	if err := m.fams.AddLocked(cf, func(idx uint16) *family { return newFamily(m, cf, idx) }); err != nil {
		return lockErr("add-column-family", txnlock.Request{CF: cf}, nil, err)
	}
	return nil
}

// DropColumnFamily forgets cf (see txnlock.Manager): ErrColumnFamilyInUse
// while any lock is held or requested in it, and for the default family.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error {
	req := txnlock.Request{CF: cf}
	m.fams.Mu.Lock()
	defer m.fams.Mu.Unlock()
	if m.closed.Load() {
		return lockErr("drop-column-family", req, nil, txnlock.ErrClosed)
	}
	f, err := m.fams.Family(cf)
	if err != nil {
		return lockErr("drop-column-family", req, nil, err)
	}
	if cf == txnlock.DefaultColumnFamily {
		return lockErr("drop-column-family", req, nil, txnlock.ErrColumnFamilyInUse)
	}
	f.lockStripes()
	defer f.unlockStripes()
	if f.inUseLocked() {
		return lockErr("drop-column-family", req, nil, txnlock.ErrColumnFamilyInUse)
	}
	f.dead = txnlock.ErrUnknownColumnFamily
	f.addCountersLocked(&m.fams.Retired)
	f.resetMemLocked()
	m.fams.RemoveLocked(cf)
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, and makes
// every later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error {
	m.fams.Mu.Lock()
	defer m.fams.Mu.Unlock()
	if m.closed.Swap(true) {
		return &txnlock.LockError{Op: "close", Err: txnlock.ErrClosed}
	}
	for _, f := range m.fams.All {
		f.close()
	}
	m.txns.Clear()
	if m.det != nil {
		m.det.Detach()
	}
	return nil
}
