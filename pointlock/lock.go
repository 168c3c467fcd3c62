package pointlock

import (
	"context"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/shell"
)

// Lock acquires the single key of req.Range ([k, k], from txnlock.Point) in
// req.Mode for req.Txn, waiting as req.Timeout and ctx allow. A range of
// more than one key is ErrRangeNotSupported. See txnlock.Manager.
func (m *Manager) Lock(ctx context.Context, req txnlock.Request) error {
	key, lm, timeout, err := m.checkLock(ctx, &req)
	if err != nil {
		return shell.LockErr("lock", req, nil, err)
	}
	h := m.hash(key)
	st := lm.stripe(h)
	st.mu.Lock()
	if st.dropped || m.sh.Closed() {
		st.mu.Unlock()
		return m.lateErr(req)
	}
	l, pos := st.tab.Find(h, key)
	if l == nil {
		// A new key: the common, uncontended case.
		if m.maxLocks > 0 && !m.reserveKey() {
			st.c.Limits++
			st.mu.Unlock()
			return shell.LockErr("lock", req, nil, txnlock.ErrLockLimit)
		}
		l = st.tab.New(pos, h, key)
		m.sh.Txns.Grant(l, req.Txn, req.Mode, st.cfIdx)
		st.held++
		st.c.Acquired++
		st.mu.Unlock()
		return nil
	}
	d, upgrade := l.Decide(req.Txn, req.Mode, false)
	switch d {
	case locktable.Covered:
		st.c.Acquired++ // a re-lock: a set, not a counter
		st.mu.Unlock()
		return nil
	case locktable.Grant, locktable.GrantPast:
		if !l.Held() {
			// The Lock only had failed waiters leaving: the key is new.
			if m.maxLocks > 0 && !m.reserveKey() {
				st.c.Limits++
				st.mu.Unlock()
				return shell.LockErr("lock", req, nil, txnlock.ErrLockLimit)
			}
			st.held++
		}
		// A holder's request (an upgrade) granted past the queue makes
		// its waiters wait for req.Txn, which may wait elsewhere
		// (detect.Graph.Passed).
		passed := m.sh.Det != nil && d == locktable.GrantPast
		m.sh.Txns.Grant(l, req.Txn, req.Mode, st.cfIdx)
		st.c.Acquired++
		st.mu.Unlock()
		if passed {
			m.sh.Det.Passed(req.Txn)
		}
		return nil
	}
	if timeout == txnlock.NoWait {
		st.c.Timeouts++
		blockers := l.WaitsForNew(nil, req.Txn, req.Mode, upgrade)
		st.mu.Unlock()
		return shell.LockErr("lock", req, blockers, txnlock.ErrLockNoWait)
	}
	w := m.enqueueLocked(st, l, &req, upgrade)
	st.mu.Unlock()
	if m.queued != nil {
		m.queued(req.Txn)
	}
	err = w.Wait(ctx, timeout, m.clock, m.sh.Det)
	if err == nil {
		// The granter recorded the hold (in the Lock and in this
		// transaction's record) and unlinked w before it woke it.
		w.Release()
		return nil
	}
	st.mu.Lock()
	var blockers []txnlock.TxnID
	if err == txnlock.ErrLockTimeout {
		// Only a timeout reports whom it waited for.
		blockers = l.WaitsFor(nil, w)
	}
	m.leaveLocked(st, h, l, w, err)
	st.mu.Unlock()
	w.Release()
	return shell.LockErr("lock", req, blockers, err)
}

// checkLock validates a request before any state is touched and returns its
// key, column family map and resolved timeout.
func (m *Manager) checkLock(ctx context.Context, req *txnlock.Request) ([]byte, *lockMap, time.Duration, error) {
	key, rangeErr := pointKey(&req.Range)
	lm, timeout, err := m.sh.CheckLock(ctx, req, rangeErr, m.opts.LockTimeout)
	return key, lm, timeout, err
}

// pointKey returns the key of a [k, k] range. The common spelling (start
// just before k, end just after k) is checked inline; anything else goes
// through Range.PointKey.
func pointKey(r *txnlock.Range) ([]byte, error) {
	if e := r.End(); e.IsAfter() {
		if s := r.Start(); !s.IsAfter() {
			if sk, ek := s.Key(), e.Key(); sk != nil && string(sk) == string(ek) {
				return sk, nil
			}
		}
	}
	return pointKeySlow(r)
}

func pointKeySlow(r *txnlock.Range) ([]byte, error) {
	if key, ok := r.PointKey(); ok {
		return key, nil
	}
	if !r.Valid() {
		return nil, txnlock.ErrInvalidRange
	}
	return nil, txnlock.ErrRangeNotSupported
}

// lateErr is the error of a request that found its stripe dropped or the
// manager closed once it held the stripe mutex.
func (m *Manager) lateErr(req txnlock.Request) error {
	if m.sh.Closed() {
		return shell.LockErr("lock", req, nil, txnlock.ErrClosed)
	}
	return shell.LockErr("lock", req, nil, txnlock.ErrUnknownColumnFamily)
}

// reserveKey counts one more locked key against MaxLocks, or reports that
// the limit is reached.
func (m *Manager) reserveKey() bool {
	if m.nlocks.Add(1) > m.maxLocks {
		m.nlocks.Add(-1)
		return false
	}
	return true
}

// enqueueLocked queues a waiter for req on l and, with a detector, makes
// the stripe its Source (detect.go). The waiter reports its wait itself,
// in Wait.
func (m *Manager) enqueueLocked(st *stripe, l *locktable.Lock, req *txnlock.Request, upgrade bool) *lockwait.Waiter {
	ref := txnlock.LockRef{CF: req.CF, Mode: req.Mode}
	var det *locktable.Detector
	if m.sh.Det != nil {
		// For the detector's reports; Status takes the key from the Lock.
		det = l.Det()
		if det.Ref.Start().Key() == nil { // not set since the Lock was made
			det.Ref = txnlock.Point([]byte(l.Key()))
		}
		ref.Range = det.Ref
	}
	w := lockwait.New(req.Txn, ref, m.now())
	w.Upgrade, w.MaySkip = upgrade, upgrade // only an upgrade goes ahead of the queue
	l.Enqueue(w)
	st.c.BeginWait()
	if m.sh.Det != nil {
		w.Ext = l
		w.Src = st
		w.Blocked = l.AppendHolders(w.Blocked[:0])
		w.WatchGrants(l.GrantCount())
		w.Stamp = m.sh.Det.Stamp()
	}
	return w
}
