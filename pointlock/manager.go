package pointlock

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/shell"
)

// Manager is the point-lock manager: Shared and Exclusive locks on single
// keys, per column family, with FIFO waiting. It implements txnlock.Manager
// and is safe for concurrent use.
type Manager struct {
	// sh is the column families, what each transaction holds and the
	// detector: what both managers share.
	sh       shell.Shell[lockMap, *lockMap]
	opts     Options
	clock    txnlock.Clock
	kh       keytable.Hash
	hashMask uint64 // ^0; tests narrow it to force hash collisions
	maxLocks int64

	// nlocks counts locked keys when maxLocks > 0 (unused otherwise).
	nlocks atomic.Int64

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
	}
	m.sh.Init(opts.Stripes, func(cf txnlock.ColumnFamily, idx uint16) *lockMap {
		return newLockMap(m, cf, idx, opts.Stripes)
	}, opts.Detector, lockCounter{m})
	return m, nil
}

// Options returns the options in effect (defaults filled).
func (m *Manager) Options() Options { return m.opts }

func (m *Manager) hash(key []byte) uint64 { return keytable.Sum(&m.kh, key) & m.hashMask }

// hashString hashes a key for Records.Next (the stripe is the hash's).
func (m *Manager) hashString(key string) (uint64, int) {
	return keytable.Sum(&m.kh, key) & m.hashMask, 0
}

// AddColumnFamily registers cf (see txnlock.Manager).
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error { return m.sh.AddColumnFamily(cf) }

// DropColumnFamily forgets cf (see txnlock.Manager): ErrColumnFamilyInUse
// while any lock is held or requested in it, and for the default column
// family.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error { return m.sh.DropColumnFamily(cf) }

// Stats returns the manager's counters, summed over its column families
// and those dropped so far.
func (m *Manager) Stats() txnlock.Stats { return m.sh.Stats() }

// Retire marks lm dropped, unless a key of it is held or requested
// (shell.Family): every stripe is taken, in index order (the only place
// two stripes are held at once), so that a request that loaded the old
// registry fails.
func (lm *lockMap) Retire(retired *txnlock.Stats) error {
	for i := range lm.strip {
		lm.strip[i].mu.Lock()
	}
	inUse := false
	for i := range lm.strip {
		inUse = inUse || lm.strip[i].tab.Len() > 0
	}
	for i := range lm.strip {
		st := &lm.strip[i]
		st.dropped = !inUse
		if !inUse {
			st.c.AddTo(retired)
		}
		st.mu.Unlock()
	}
	if inUse {
		return txnlock.ErrColumnFamilyInUse
	}
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, and makes every
// later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error {
	if err := m.sh.Close(); err != nil {
		return err
	}
	m.nlocks.Store(0)
	return nil
}

// Close fails lm's waiters with ErrClosed and drops its locks
// (shell.Family). Waiters unlink themselves from the dropped Locks.
func (lm *lockMap) Close() {
	for i := range lm.strip {
		st := &lm.strip[i]
		st.mu.Lock()
		st.tab.All(func(_ uint64, l *locktable.Lock) bool {
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

// now is the manager clock's time.
func (m *Manager) now() time.Time { return m.clock.Now() }
