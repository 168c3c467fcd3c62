package pointlock

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/shell"
)

// Manager is the point-lock manager: Shared and Exclusive locks on single
// keys, per column family, with FIFO waiting. It implements txnlock.Manager
// and is safe for concurrent use.
type Manager struct {
	opts Options
	det  detect.Graph // attached to Options.Detector; nil: no deadlock detection
	// finiteWaits: the detector needs every wait to end by a timeout.
	finiteWaits bool
	clock       txnlock.Clock
	kh          keytable.Hash
	hashMask    uint64 // ^0; tests narrow it to force hash collisions
	maxLocks    int64

	cfs  shell.Families[lockMap] // the column families
	txns shell.Records           // what each transaction holds

	// nlocks counts locked keys when maxLocks > 0 (unused otherwise).
	nlocks atomic.Int64
	closed atomic.Bool

	// queued, if set, is called by a request that has joined a queue,
	// with no latch held, before it waits: the contract tests order their
	// steps by it. Set before first use; immutable.
	queued func(txnlock.TxnID)
}

// New returns a Manager with opts (zero fields take their defaults).
func New(opts Options) (*Manager, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:     opts,
		clock:    opts.Clock,
		kh:       keytable.NewHash(),
		hashMask: math.MaxUint64,
		maxLocks: int64(opts.MaxLocks),
		txns:     shell.NewRecords(opts.Stripes),
	}
	m.cfs.Init(func(idx uint16) *lockMap { return newLockMap(m, txnlock.DefaultColumnFamily, idx, opts.Stripes) })
	if opts.Detector != nil {
		d := opts.Detector.Seam()
		m.det = d.Attach(lockCounter{m})
		m.finiteWaits = d.FiniteWaits()
	}
	return m, nil
}

// Options returns the options in effect (defaults filled).
func (m *Manager) Options() Options { return m.opts }

func (m *Manager) hash(key []byte) uint64 { return keytable.Sum(&m.kh, key) & m.hashMask }

// hashString hashes a key for Records.Next (the stripe is the hash's).
func (m *Manager) hashString(key string) (uint64, int) {
	return keytable.Sum(&m.kh, key) & m.hashMask, 0
}

// AddColumnFamily registers cf. ErrColumnFamilyExists if it exists,
// ErrUnknownColumnFamily if it is negative.
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error {
	m.cfs.Mu.Lock()
	defer m.cfs.Mu.Unlock()
	if m.closed.Load() {
		return cfErr("add column family", cf, txnlock.ErrClosed)
	}
	err := m.cfs.AddLocked(cf, func(idx uint16) *lockMap { return newLockMap(m, cf, idx, m.opts.Stripes) })
	if err != nil {
		return cfErr("add column family", cf, err)
	}
	return nil
}

// DropColumnFamily forgets cf. ErrColumnFamilyInUse while any key of cf is
// held or requested, and for the default column family;
// ErrUnknownColumnFamily if cf is not registered.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error {
	m.cfs.Mu.Lock()
	defer m.cfs.Mu.Unlock()
	if m.closed.Load() {
		return cfErr("drop column family", cf, txnlock.ErrClosed)
	}
	lm, err := m.cfs.Family(cf)
	switch {
	case err != nil:
		return cfErr("drop column family", cf, err)
	case cf == txnlock.DefaultColumnFamily:
		return cfErr("drop column family", cf, txnlock.ErrColumnFamilyInUse)
	}
	// Lock every stripe (in index order, the only place two stripes are
	// held at once), check that all are empty, and mark them dropped so
	// that a request that loaded the old registry fails.
	for i := range lm.strip {
		lm.strip[i].mu.Lock()
	}
	inUse := false
	for i := range lm.strip {
		if lm.strip[i].tab.Len() > 0 {
			inUse = true
			break
		}
	}
	for i := range lm.strip {
		st := &lm.strip[i]
		st.dropped = !inUse
		if !inUse {
			st.c.AddTo(&m.cfs.Retired)
		}
		st.mu.Unlock()
	}
	if inUse {
		return cfErr("drop column family", cf, txnlock.ErrColumnFamilyInUse)
	}
	m.cfs.RemoveLocked(cf)
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, and makes every
// later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error {
	m.cfs.Mu.Lock()
	defer m.cfs.Mu.Unlock()
	if m.closed.Swap(true) {
		return &txnlock.LockError{Op: "close", Err: txnlock.ErrClosed}
	}
	for _, lm := range m.cfs.All {
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			st.tab.All(func(_ uint64, l *locktable.Lock) bool {
				// Waiters unlink themselves from the dropped Lock.
				for w := l.Front(); w != nil; w = w.Next() {
					w.Fail(txnlock.ErrClosed)
				}
				return true
			})
			st.tab.Reset()
			st.held = 0
			st.mu.Unlock()
		}
	}
	m.txns.Clear()
	m.nlocks.Store(0)
	if m.det != nil {
		m.det.Detach()
	}
	return nil
}

func cfErr(op string, cf txnlock.ColumnFamily, err error) error {
	return &txnlock.LockError{Op: op, CF: cf, Err: err}
}

// now is the manager clock's time.
func (m *Manager) now() time.Time { return m.clock.Now() }
