package pointlock

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/txntable"
)

// recordLocked returns txn's record, creating it, with its transaction
// stripe ts held.
func recordLocked(ts *txnStripe, txn txnlock.TxnID) *txnRecord {
	rec, created := ts.GetOrCreateLocked(txn)
	if created {
		rec.holds.Txn = txn
	}
	return rec
}

// grantLocked records that txn holds l in mode: in the Lock, and in the
// transaction's record. The caller
// adjusts st.held and MaxLocks for a first holder.
func (m *Manager) grantLocked(st *stripe, l *locktable.Lock, txn txnlock.TxnID, mode txnlock.Mode) {
	ts := m.txns.Stripe(txn)
	ts.Mu.Lock()
	l.Grant(&recordLocked(ts, txn).holds, mode, st.cfIdx)
	ts.Mu.Unlock()
}

// releaseLocked removes txn's hold on l, from the Lock and from the
// transaction's record (which stays, perhaps empty, until UnlockAll: a
// transaction that locks and unlocks one key at a time keeps it). It
// reports false if txn does not hold l. It wakes no one: the caller calls
// settleLocked.
func (m *Manager) releaseLocked(l *locktable.Lock, txn txnlock.TxnID) bool {
	ts := m.txns.Stripe(txn)
	ts.Mu.Lock()
	ok := l.Release(txn)
	ts.Mu.Unlock()
	return ok
}

// settleLocked restores l's invariants after its holders or its queue
// changed: it grants what can now be granted (locktable.Lock.Grants),
// keeps the key counts, and drops l once nobody
// holds or waits for it. wasHeld says whether l had a holder before the
// change. A closed manager grants nothing.
func (m *Manager) settleLocked(st *stripe, h uint64, l *locktable.Lock, wasHeld bool) {
	if l.Queued() > 0 && !m.closed.Load() {
		var now = m.now()
		for w := range l.Grants(nil, false) {
			if !w.Claim() {
				continue // failed meanwhile: its goroutine unlinks it
			}
			since := w.Since
			ts := m.txns.Stripe(w.Txn())
			ts.Mu.Lock()
			l.GrantWaiter(w, &recordLocked(ts, w.Txn()).holds, st.cfIdx)
			ts.Mu.Unlock()
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
	if m.closed.Load() {
		return unlockErr(txn, cf, &r, txnlock.ErrClosed)
	}
	if !txn.Valid() {
		return unlockErr(txn, cf, &r, txnlock.ErrInvalidTxn)
	}
	key, err := pointKey(&r)
	if err != nil {
		return unlockErr(txn, cf, &r, err)
	}
	lm := m.cfs.Load().get(cf)
	if lm == nil {
		return unlockErr(txn, cf, &r, txnlock.ErrUnknownColumnFamily)
	}
	h := m.hash(key)
	st := lm.stripe(h)
	st.mu.Lock()
	if st.dropped || m.closed.Load() {
		st.mu.Unlock()
		if m.closed.Load() {
			return unlockErr(txn, cf, &r, txnlock.ErrClosed)
		}
		return unlockErr(txn, cf, &r, txnlock.ErrUnknownColumnFamily)
	}
	l, _ := st.tab.Find(h, key)
	if l == nil || !m.releaseLocked(l, txn) {
		st.mu.Unlock()
		return unlockErr(txn, cf, &r, txnlock.ErrNotHeld)
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

func unlockErr(txn txnlock.TxnID, cf txnlock.ColumnFamily, r *txnlock.Range, err error) error {
	return lockErr("unlock", txnlock.Request{Txn: txn, CF: cf, Range: *r}, nil, err)
}

// UnlockAll releases every lock txn holds, one at a time, at a cost
// proportional to what it holds. Releasing nothing is not an error.
func (m *Manager) UnlockAll(txn txnlock.TxnID) error {
	if m.closed.Load() {
		return &txnlock.LockError{Op: "unlock all", Txn: txn, Err: txnlock.ErrClosed}
	}
	if !txn.Valid() {
		return &txnlock.LockError{Op: "unlock all", Txn: txn, Err: txnlock.ErrInvalidTxn}
	}
	ts := m.txns.Stripe(txn)
	for {
		// Take the last hold under the transaction stripe, then release it
		// under its key's stripe (stripe before transaction stripe is the
		// lock order, so the two are taken one after the other and the key
		// is looked up again).
		ts.Mu.Lock()
		rec := ts.GetLocked(txn)
		if rec == nil || rec.holds.Len() == 0 {
			if rec != nil {
				// No Lock points to it any more: keep it, with its holds
				// buffer, for the stripe's next transaction.
				ts.DeleteLocked(txn)
				rec.holds.Reset(maxKeptHolds)
				ts.RecycleLocked(rec)
			}
			ts.Mu.Unlock()
			return nil
		}
		hd := rec.holds.Last()
		l := hd.Lock()
		h := m.hashString(l.Key()) // l is held, so its key is stable here
		lm := m.cfs.Load().byIdx[hd.Home]
		ts.Mu.Unlock()

		st := lm.stripe(h)
		st.mu.Lock()
		if st.dropped || m.closed.Load() {
			st.mu.Unlock()
			return nil
		}
		// l may have been released meanwhile (by a concurrent Unlock of
		// this transaction) and even recycled: act only if it is still in
		// the table and held by txn.
		if st.tab.Has(h, l) && m.releaseLocked(l, txn) {
			st.c.Released++
			m.settleLocked(st, h, l, true)
		}
		st.mu.Unlock()
	}
}

// maxKeptHolds bounds the capacity of the holds list a recycled record
// keeps.
const maxKeptHolds = 256

// txnStripe is a stripe of the transaction table.
type txnStripe = txntable.Stripe[txnRecord]
