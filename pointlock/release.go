package pointlock

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/shell"
)

// settleLocked restores l's invariants after its holders or its queue
// changed: it grants what can now be granted (locktable.Lock.Grants),
// keeps the key counts, and drops l once nobody
// holds or waits for it. wasHeld says whether l had a holder before the
// change. A closed manager grants nothing.
func (m *Manager) settleLocked(st *stripe, h uint64, l *locktable.Lock, wasHeld bool) {
	if l.Queued() > 0 && !m.sh.Closed() {
		var now = m.now()
		for w := range l.Grants(nil, false) {
			if !w.Claim() {
				continue // failed meanwhile: its goroutine unlinks it
			}
			since := w.Since
			m.sh.Txns.GrantWaiter(l, w, st.cfIdx)
			w.Wake() // w is not touched after this
			st.c.Acquired++
			st.c.EndWait(nil, since, now)
		}
	}
	switch isHeld := l.Held(); {
	case wasHeld && !isHeld:
		st.held--
		if m.maxLocks > 0 {
			m.nlocks.Add(-1)
		}
	case !wasHeld && isHeld:
		st.held++
		if m.maxLocks > 0 {
			m.nlocks.Add(1) // granted from the queue: already promised
		}
	}
	if l.Empty() {
		st.tab.Delete(h, l)
	}
}

// leaveLocked unlinks a waiter whose Wait failed with err, and re-checks
// the queue behind it exactly as a release does.
func (m *Manager) leaveLocked(st *stripe, h uint64, l *locktable.Lock, w *lockwait.Waiter, err error) {
	l.Leave(w)
	st.c.EndWait(err, w.Since, m.now())
	m.settleLocked(st, h, l, l.Held())
}

// Unlock releases txn's lock on the key of r ([k, k]) in cf and wakes the
// requests that can now be granted. ErrNotHeld if txn does not hold it.
func (m *Manager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	key, rangeErr := pointKey(&r)
	lm, err := m.sh.CheckUnlock(txn, cf, rangeErr)
	if err != nil {
		return shell.UnlockErr(txn, cf, r, err)
	}
	h := m.hash(key)
	st := lm.stripe(h)
	st.mu.Lock()
	if st.dropped || m.sh.Closed() {
		st.mu.Unlock()
		if m.sh.Closed() {
			return shell.UnlockErr(txn, cf, r, txnlock.ErrClosed)
		}
		return shell.UnlockErr(txn, cf, r, txnlock.ErrUnknownColumnFamily)
	}
	l, _ := st.tab.Find(h, key)
	if l == nil || !m.sh.Txns.Release(l, txn) {
		st.mu.Unlock()
		return shell.UnlockErr(txn, cf, r, txnlock.ErrNotHeld)
	}
	st.c.Released++
	if l.Empty() {
		// Its only holder, nobody waiting: the key goes.
		st.held--
		if m.maxLocks > 0 {
			m.nlocks.Add(-1)
		}
		st.tab.Delete(h, l)
	} else {
		m.settleLocked(st, h, l, true)
	}
	st.mu.Unlock()
	return nil
}

// UnlockAll releases every lock txn holds, one at a time, at a cost
// proportional to what it holds. Releasing nothing is not an error.
func (m *Manager) UnlockAll(txn txnlock.TxnID) error {
	if err := m.sh.CheckUnlockAll(txn); err != nil {
		return err
	}
	for {
		// Take the last hold from the record, then release it under its
		// key's stripe (stripe before record is the lock order, so the two
		// are taken one after the other and the key is looked up again).
		l, h, _, home, _, done := m.sh.Txns.Next(txn, m.hashString)
		if done {
			return nil
		}
		st := m.sh.Fams.At(home).stripe(h)
		st.mu.Lock()
		if st.dropped || m.sh.Closed() {
			st.mu.Unlock()
			return nil
		}
		// l may have been released meanwhile (by a concurrent Unlock of
		// this transaction) and even recycled: act only if it is still in
		// the table and held by txn.
		if st.tab.Has(h, l) && m.sh.Txns.Release(l, txn) {
			st.c.Released++
			m.settleLocked(st, h, l, true)
		}
		st.mu.Unlock()
	}
}
