package rangelock

import (
	"context"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
)

// Manager is the range lock manager (txnlock.Manager). It is safe for
// concurrent use.
type Manager struct {
	opts  Options
	det   txnlock.Detector // nil: no deadlock detection
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

var _ txnlock.Manager = (*Manager)(nil)

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
		det:   opts.Detector,
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
	return m, nil
}

// Options returns the options in use (defaults filled in).
func (m *Manager) Options() Options { return m.opts }

// family returns the registered column family cf.
func (m *Manager) family(cf txnlock.ColumnFamily) (*family, error) {
	if cf == txnlock.DefaultColumnFamily {
		return m.def, nil
	}
	if cf < 0 {
		return nil, txnlock.ErrUnknownColumnFamily
	}
	f := (*m.fams.Load())[cf]
	if f == nil {
		return nil, txnlock.ErrUnknownColumnFamily
	}
	return f, nil
}

// hashKey returns the hash of point key k (its place in a stripe's table,
// from the high bits) and its stripe (from the low bits; with the test
// option fixedHash, from stripeOf, the same in every run). One hash per
// request serves both.
func (m *Manager) hashKey(k []byte) (uint64, int) {
	h := m.keyHash(k)
	if m.opts.fixedHash {
		return h, m.stripeOf(k)
	}
	return h, int(h & m.mask)
}

// keyHash returns the hash of point key k, its place in its stripe's
// table.
func (m *Manager) keyHash(k []byte) uint64 { return keytable.Sum(&m.kh, k) }

// stripeOf returns the stripe index of point key k: a seeded
// multiply-xor hash over 8-byte words, enough to spread keys over a few
// hundred stripes (a stripe collision costs contention, never
// correctness, so it need not resist chosen keys the way a map hash
// does).
func (m *Manager) stripeOf(k []byte) int {
	h := m.seed ^ uint64(len(k))*0x9e3779b97f4a7c15
	for len(k) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(k)) * 0xff51afd7ed558ccd
		h ^= h >> 32
		k = k[8:]
	}
	if len(k) > 0 {
		var tail uint64
		for i, c := range k {
			tail |= uint64(c) << (8 * i)
		}
		h = (h ^ tail) * 0xc4ceb9fe1a85ec53
	}
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	h ^= h >> 32
	return int(h & m.mask)
}

// Lock acquires req.Range in column family req.CF in req.Mode (see
// txnlock.Manager). A point range [k, k] takes one stripe mutex; any other
// range takes every stripe mutex of the family.
func (m *Manager) Lock(ctx context.Context, req txnlock.Request) error {
	k, point := req.Range.PointKey()
	f, timeout, err := m.checkLock(ctx, &req, point)
	if err != nil {
		return lockErr("lock", req, nil, err)
	}
	if !point {
		return m.lockSlow(ctx, f, &request{txn: req.Txn, r: req.Range, mode: req.Mode, stripe: wideStripe}, req, timeout)
	}
	h, si := m.hashKey(k)
	if done, err := f.lockPointFast(req.Txn, k, h, si, req.Mode); done {
		if err != nil {
			return lockErr("lock", req, nil, err)
		}
		return nil
	}
	return m.lockSlow(ctx, f, &request{txn: req.Txn, r: req.Range, mode: req.Mode, key: k, h: h, stripe: si}, req, timeout)
}

// lockSlow runs q, the request req that lockPointFast did not grant, through
// family.lock.
func (m *Manager) lockSlow(ctx context.Context, f *family, q *request, req txnlock.Request, timeout time.Duration) error {
	blockers, err := f.lock(ctx, q, timeout)
	if err != nil {
		if err != txnlock.ErrLockTimeout {
			blockers = nil // LockError.Blockers is for timeouts
		}
		return lockErr("lock", req, blockers, err)
	}
	return nil
}

// checkLock validates a Lock call and returns its family and resolved
// timeout. point says req.Range is [k, k] (so it is valid).
func (m *Manager) checkLock(ctx context.Context, req *txnlock.Request, point bool) (*family, time.Duration, error) {
	switch {
	case ctx == nil:
		return nil, 0, txnlock.ErrNilContext
	case m.closed.Load():
		return nil, 0, txnlock.ErrClosed
	case !req.Txn.Valid():
		return nil, 0, txnlock.ErrInvalidTxn
	case !req.Mode.Valid():
		return nil, 0, txnlock.ErrInvalidMode
	case !point && !req.Range.Valid():
		return nil, 0, txnlock.ErrInvalidRange
	}
	timeout, err := txnlock.ResolveTimeout(req.Timeout, m.opts.LockTimeout)
	if err != nil {
		return nil, 0, err
	}
	f, err := m.family(req.CF)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return f, timeout, nil
}

func unlockErr(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range, err error) error {
	return lockErr("unlock", txnlock.Request{Txn: txn, CF: cf, Range: r}, nil, err)
}

// lockErr wraps err for the request.
func lockErr(op string, req txnlock.Request, blockers []txnlock.TxnID, err error) error {
	return &txnlock.LockError{Op: strings.ReplaceAll(op, "-", " "), Txn: req.Txn, CF: req.CF, Range: req.Range, Mode: req.Mode, Blockers: blockers, Err: err}
}

// Unlock releases the part of r that txn holds in cf: all of r must be
// held (in any mode), else ErrNotHeld and nothing changes. Unlocking part
// of a held range keeps the rest of it.
func (m *Manager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	k, point := r.PointKey()
	switch {
	case m.closed.Load():
		return unlockErr(txn, cf, r, txnlock.ErrClosed)
	case !txn.Valid():
		return unlockErr(txn, cf, r, txnlock.ErrInvalidTxn)
	case !point && !r.Valid():
		return unlockErr(txn, cf, r, txnlock.ErrInvalidRange)
	}
	f, err := m.family(cf)
	if err != nil {
		return unlockErr(txn, cf, r, err)
	}
	if err := f.unlock(txn, r, k, point); err != nil {
		return unlockErr(txn, cf, r, err)
	}
	return nil
}

// UnlockAll releases every lock txn holds, in every column family, at a
// cost proportional to the stripes it touched.
func (m *Manager) UnlockAll(txn txnlock.TxnID) error {
	req := txnlock.Request{Txn: txn}
	switch {
	case m.closed.Load():
		return lockErr("unlock-all", req, nil, txnlock.ErrClosed)
	case !txn.Valid():
		return lockErr("unlock-all", req, nil, txnlock.ErrInvalidTxn)
	}
	// Escalation may give txn new wide locks while we release: it records
	// them in the table, so repeat until the table has nothing for txn.
	for {
		touched := m.txns.take(txn)
		if touched == nil {
			return nil
		}
		touched.touches(func(t *famTouch) { t.f.unlockAll(txn, t) })
		m.txns.recycle(txn, touched)
	}
}

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
	return nil
}
