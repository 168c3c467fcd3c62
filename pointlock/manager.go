package pointlock

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/txntable"
)

// Manager is the point-lock manager: Shared and Exclusive locks on single
// keys, per column family, with FIFO waiting. It implements txnlock.Manager
// and is safe for concurrent use.
type Manager struct {
	opts     Options
	det      txnlock.WaitGraph // attached to Options.Detector; nil: no deadlock detection
	clock    txnlock.Clock
	kh       keytable.Hash
	hashMask uint64 // ^0; tests narrow it to force hash collisions
	maxLocks int64

	// cfs is the column family registry, an immutable table replaced as a
	// whole (copy on write) under cfMu, so that requests read it with one
	// atomic load.
	cfs  atomic.Pointer[cfTable]
	cfMu sync.Mutex // serializes AddColumnFamily, DropColumnFamily, Close
	// retired holds the counters of dropped column families; guarded by
	// cfMu.
	retired txnlock.Stats

	// txns holds one record per transaction that has taken a lock since
	// its last UnlockAll.
	txns *txntable.Table[txnRecord]

	// nlocks counts locked keys when maxLocks > 0 (unused otherwise).
	nlocks atomic.Int64
	closed atomic.Bool

	// queued, if set, is called by a request that has joined a queue,
	// with no latch held, before it waits: the contract tests order their
	// steps by it. Set before first use; immutable.
	queued func(txnlock.TxnID)
}

// txnRecord is what one transaction holds in this manager, in every
// column family (Holder.Home is the column family's index). Guarded by the
// mutex of the transaction's txntable stripe.
type txnRecord struct {
	holds locktable.Holds
}

// cfTable is an immutable snapshot of the registered column families.
type cfTable struct {
	def   *lockMap
	byID  map[txnlock.ColumnFamily]*lockMap
	byIdx []*lockMap // nil where free
}

func (t *cfTable) get(cf txnlock.ColumnFamily) *lockMap {
	if cf == txnlock.DefaultColumnFamily {
		return t.def
	}
	return t.byID[cf]
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
		txns:     txntable.New[txnRecord](opts.Stripes),
	}
	def := newLockMap(m, txnlock.DefaultColumnFamily, 0, opts.Stripes)
	m.cfs.Store(&cfTable{
		def:   def,
		byID:  map[txnlock.ColumnFamily]*lockMap{txnlock.DefaultColumnFamily: def},
		byIdx: []*lockMap{def},
	})
	if opts.Detector != nil {
		m.det = opts.Detector.Attach(lockCounter{m})
	}
	return m, nil
}

// Options returns the options in effect (defaults filled).
func (m *Manager) Options() Options { return m.opts }

func (m *Manager) hash(key []byte) uint64 { return keytable.Sum(&m.kh, key) & m.hashMask }

func (m *Manager) hashString(key string) uint64 { return keytable.Sum(&m.kh, key) & m.hashMask }

// AddColumnFamily registers cf. ErrColumnFamilyExists if it exists,
// ErrUnknownColumnFamily if it is negative.
func (m *Manager) AddColumnFamily(cf txnlock.ColumnFamily) error {
	m.cfMu.Lock()
	defer m.cfMu.Unlock()
	if m.closed.Load() {
		return cfErr("add column family", cf, txnlock.ErrClosed)
	}
	if cf < 0 {
		return cfErr("add column family", cf, txnlock.ErrUnknownColumnFamily)
	}
	old := m.cfs.Load()
	if old.byID[cf] != nil {
		return cfErr("add column family", cf, txnlock.ErrColumnFamilyExists)
	}
	idx := -1
	for i, lm := range old.byIdx {
		if lm == nil {
			idx = i
			break
		}
	}
	if idx < 0 {
		if len(old.byIdx) > math.MaxUint16 {
			return cfErr("add column family", cf, txnlock.ErrLockLimit)
		}
		idx = len(old.byIdx)
	}
	t := &cfTable{def: old.def, byID: make(map[txnlock.ColumnFamily]*lockMap, len(old.byID)+1)}
	for id, lm := range old.byID {
		t.byID[id] = lm
	}
	t.byIdx = append(make([]*lockMap, 0, len(old.byIdx)+1), old.byIdx...)
	lm := newLockMap(m, cf, uint16(idx), m.opts.Stripes)
	if idx == len(t.byIdx) {
		t.byIdx = append(t.byIdx, lm)
	} else {
		t.byIdx[idx] = lm
	}
	t.byID[cf] = lm
	m.cfs.Store(t)
	return nil
}

// DropColumnFamily forgets cf. ErrColumnFamilyInUse while any key of cf is
// held or requested, and for the default column family;
// ErrUnknownColumnFamily if cf is not registered.
func (m *Manager) DropColumnFamily(cf txnlock.ColumnFamily) error {
	m.cfMu.Lock()
	defer m.cfMu.Unlock()
	if m.closed.Load() {
		return cfErr("drop column family", cf, txnlock.ErrClosed)
	}
	old := m.cfs.Load()
	lm := old.get(cf)
	switch {
	case cf < 0 || lm == nil:
		return cfErr("drop column family", cf, txnlock.ErrUnknownColumnFamily)
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
			st.c.AddTo(&m.retired)
		}
		st.mu.Unlock()
	}
	if inUse {
		return cfErr("drop column family", cf, txnlock.ErrColumnFamilyInUse)
	}
	t := &cfTable{def: old.def, byID: make(map[txnlock.ColumnFamily]*lockMap, len(old.byID))}
	for id, l := range old.byID {
		if id != cf {
			t.byID[id] = l
		}
	}
	t.byIdx = append([]*lockMap(nil), old.byIdx...)
	t.byIdx[lm.idx] = nil
	m.cfs.Store(t)
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, and makes every
// later call fail with ErrClosed. Closing twice returns ErrClosed.
func (m *Manager) Close() error {
	m.cfMu.Lock()
	defer m.cfMu.Unlock()
	if m.closed.Swap(true) {
		return &txnlock.LockError{Op: "close", Err: txnlock.ErrClosed}
	}
	for _, lm := range m.cfs.Load().byIdx {
		if lm == nil {
			continue
		}
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
	for i := 0; i < m.txns.Len(); i++ {
		ts := m.txns.At(i)
		ts.Mu.Lock()
		ts.ClearLocked()
		ts.Mu.Unlock()
	}
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
