package rangelock

import (
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
)

// Manager is the range lock manager (txnlock.Manager). It is safe for
// concurrent use.
type Manager struct {
	opts  Options
	det   txnlock.WaitGraph // attached to Options.Detector; nil: no deadlock detection
	clock txnlock.Clock
	kh    keytable.Hash // hashes point keys (see hashKey)
	seed  uint64        // hashes point keys to stripes with Options.fixedHash (see stripeOf)
	mask  uint64        // Stripes - 1

	closed atomic.Bool
	// fams is the column family registry, copied on write so that the hot
	// path reads it with one atomic load. Writers hold admin.
	fams atomic.Pointer[map[txnlock.ColumnFamily]*family]
	def  *family // the default family, never dropped; immutable
	// admin serializes AddColumnFamily, DropColumnFamily, Close and
	// Stats. It comes before every stripe mutex in the lock order.
	admin sync.Mutex
	// retired is the counters of the dropped column families, for
	// Stats; guarded by admin.
	retired txnlock.Stats

	txns txnTable
	mem  memBudget

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
	m.txns.init(opts.Stripes)
	m.def = newFamily(m, txnlock.DefaultColumnFamily)
	fams := map[txnlock.ColumnFamily]*family{txnlock.DefaultColumnFamily: m.def}
	m.fams.Store(&fams)
	if opts.Detector != nil {
		m.det = opts.Detector.Attach(lockCounter{m})
	}
	return m, nil
}

// Options returns the options in use (defaults filled in).
func (m *Manager) Options() Options { return m.opts }

// AddColumnFamily registers cf (see txnlock.Manager).
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error {
	req := txnlock.Request{CF: cf}
	m.admin.Lock()
	defer m.admin.Unlock()
	switch {
	case m.closed.Load():
		return lockErr("add-column-family", req, nil, txnlock.ErrClosed)
	case cf < 0:
		return lockErr("add-column-family", req, nil, txnlock.ErrUnknownColumnFamily)
	}
	old := *m.fams.Load()
	if old[cf] != nil {
		return lockErr("add-column-family", req, nil, txnlock.ErrColumnFamilyExists)
	}
	fams := maps.Clone(old)
	fams[cf] = newFamily(m, cf)
	m.fams.Store(&fams)
	return nil
}

// DropColumnFamily forgets cf (see txnlock.Manager): ErrColumnFamilyInUse
// while any lock is held or requested in it, and for the default family.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error {
	req := txnlock.Request{CF: cf}
	m.admin.Lock()
	defer m.admin.Unlock()
	if m.closed.Load() {
		return lockErr("drop-column-family", req, nil, txnlock.ErrClosed)
	}
	f, err := m.family(cf)
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
	f.addCountersLocked(&m.retired)
	f.resetMemLocked()
	fams := maps.Clone(*m.fams.Load())
	delete(fams, cf)
	m.fams.Store(&fams)
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, and makes
// every later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error {
	m.admin.Lock()
	defer m.admin.Unlock()
	if m.closed.Swap(true) {
		return &txnlock.LockError{Op: "close", Err: txnlock.ErrClosed}
	}
	for _, f := range *m.fams.Load() {
		f.close()
	}
	m.txns.clear()
	if m.det != nil {
		m.det.Detach()
	}
	return nil
}
