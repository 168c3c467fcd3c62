package pointlock

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// addHoldLocked records that txn holds e in mode: in the entry, and in the
// transaction's record. The caller adjusts st.held and MaxLocks for a first
// holder.
func (m *Manager) addHoldLocked(st *stripe, e *entry, txn txnlock.TxnID, mode txnlock.Mode) {
	var hd *hold
	if e.h.rec == nil {
		hd = &e.h
	} else {
		hd = &hold{e: e}
		x := e.ext()
		x.more = append(x.more, hd)
	}
	hd.mode, hd.cfIdx = mode, st.cfIdx
	ts := m.txns.Stripe(txn)
	ts.Mu.Lock()
	rec, created := ts.GetOrCreateLocked(txn)
	if created {
		rec.txn = txn
	}
	hd.rec = rec
	hd.slot = int32(len(rec.holds))
	rec.holds = append(rec.holds, hd)
	ts.Mu.Unlock()
}

// dropHoldLocked removes hd from its entry and from its transaction's record
// (which stays, empty, until UnlockAll: a transaction that locks and
// unlocks one key at a time keeps it).
// It does not wake anyone: the caller calls settleLocked.
func (m *Manager) dropHoldLocked(e *entry, hd *hold) {
	rec := hd.rec
	ts := m.txns.Stripe(rec.txn)
	ts.Mu.Lock()
	last := len(rec.holds) - 1
	moved := rec.holds[last]
	rec.holds[hd.slot] = moved
	moved.slot = hd.slot
	rec.holds[last] = nil
	rec.holds = rec.holds[:last]
	ts.Mu.Unlock()

	if hd != &e.h {
		more := e.x.more
		for i, o := range more {
			if o == hd {
				more[i] = more[len(more)-1]
				more[len(more)-1] = nil
				e.x.more = more[:len(more)-1]
				break
			}
		}
		return
	}
	if e.x == nil || len(e.x.more) == 0 {
		e.h.rec, e.h.mode = nil, 0
		return
	}
	// Move the last shared holder into the embedded hold, so that h.rec is
	// nil only when nobody holds e.
	more := e.x.more
	src := more[len(more)-1]
	more[len(more)-1] = nil
	e.x.more = more[:len(more)-1]
	ts = m.txns.Stripe(src.rec.txn)
	ts.Mu.Lock()
	e.h.rec, e.h.mode, e.h.slot = src.rec, src.mode, src.slot
	src.rec.holds[src.slot] = &e.h
	ts.Mu.Unlock()
}

// settleLocked restores the entry's invariants after its holders or its
// queue changed: it grants the requests that can now be granted (FIFO, see
// grantWaitersLocked), tells the detector, keeps the key counts, and
// removes the entry once nobody holds or waits for it. wasHeld says whether
// e had a holder before the change.
func (m *Manager) settleLocked(st *stripe, h uint64, e *entry, wasHeld, holdersChanged bool) {
	if e.x != nil && e.x.q.Len() > 0 {
		if m.grantWaitersLocked(st, e) {
			holdersChanged = true
		}
		if holdersChanged {
			m.setBlockersLocked(st, e)
		}
	}
	switch isHeld := e.h.rec != nil; {
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
	if e.emptyLocked() {
		st.deleteLocked(h, e)
	}
}

// grantWaitersLocked grants, in queue order, every request that can now be
// granted, and stops at the first active one that cannot: so a Shared
// request never overtakes a waiting Exclusive one. Waiters that already
// failed are skipped (they unlink themselves). It reports whether any
// request was granted.
func (m *Manager) grantWaitersLocked(st *stripe, e *entry) bool {
	if m.closed.Load() {
		return false
	}
	x := e.x
	granted := false
	for w := x.q.Front(); w != nil; {
		next := w.Next()
		if !w.Active() {
			w = next
			continue
		}
		txn, mode := w.Txn(), w.Lock.Mode
		if !e.grantableLocked(txn, mode) {
			break
		}
		// Record the hold and unlink the waiter first, then signal: the
		// waiter returns as soon as Grant succeeds, its next call must
		// find the hold in its record, and it may recycle w at once
		// (lockwait.Waiter.Release). If the waiter failed meanwhile,
		// undo: it unlinks itself.
		since := w.Since
		x.q.Remove(w)
		if hd := e.holdOfLocked(txn); hd != nil {
			old := hd.mode
			hd.mode = old.Max(mode)
			if !w.Grant() {
				hd.mode = old
				x.q.InsertBefore(w, next)
				w = next
				continue
			}
		} else {
			m.addHoldLocked(st, e, txn, mode)
			if !w.Grant() {
				m.dropHoldLocked(e, e.holdOfLocked(txn))
				x.q.InsertBefore(w, next)
				w = next
				continue
			}
		}
		st.c.Acquired++
		st.c.EndWait(nil, since, m.now())
		granted = true
		w = next
	}
	if x.q.Len() == 0 && x.res != 0 {
		m.det.DropResource(x.res)
		x.res = 0
	}
	return granted
}

// setBlockersLocked tells the detector who holds e, if anyone waits for it.
func (m *Manager) setBlockersLocked(st *stripe, e *entry) {
	if e.x == nil || e.x.res == 0 {
		return
	}
	st.scratch = e.holdersLocked(st.scratch[:0])
	m.det.SetBlockers(e.x.res, st.scratch)
}

// removeWaiterLocked unlinks a waiter whose Wait failed with err, and
// re-checks the queue behind it exactly as a release does.
func (m *Manager) removeWaiterLocked(st *stripe, h uint64, e *entry, w *lockwait.Waiter, err error) {
	e.x.q.Remove(w)
	st.c.EndWait(err, w.Since, m.now())
	if m.det != nil && e.x.q.Len() == 0 && e.x.res != 0 {
		m.det.DropResource(e.x.res)
		e.x.res = 0
	}
	m.settleLocked(st, h, e, e.h.rec != nil, false)
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
	e, _ := st.tab.Find(h, key)
	var hd *hold
	if e != nil {
		hd = e.holdOfLocked(txn)
	}
	if hd == nil {
		st.mu.Unlock()
		return unlockErr(txn, cf, &r, txnlock.ErrNotHeld)
	}
	m.dropHoldLocked(e, hd)
	st.c.Released++
	if e.x == nil {
		// Sole holder, nobody waiting: the entry goes.
		st.held--
		if m.maxLocks > 0 {
			m.nlocks.Add(-1)
		}
		st.deleteLocked(h, e)
	} else {
		m.settleLocked(st, h, e, true, true)
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
		if rec == nil || len(rec.holds) == 0 {
			if rec != nil {
				// No hold points to it any more: keep it, with its holds
				// buffer, for the stripe's next transaction.
				ts.DeleteLocked(txn)
				rec.txn = 0
				ts.RecycleLocked(rec)
			}
			ts.Mu.Unlock()
			return nil
		}
		hd := rec.holds[len(rec.holds)-1]
		e := hd.e
		h := m.hashString(e.Key()) // e is held, so its key is stable here
		lm := m.cfs.Load().byIdx[hd.cfIdx]
		ts.Mu.Unlock()

		st := lm.stripe(h)
		st.mu.Lock()
		if st.dropped || m.closed.Load() {
			st.mu.Unlock()
			return nil
		}
		// e may have been released meanwhile (by a concurrent Unlock of
		// this transaction) and even recycled: act only if it is still in
		// the table and held by txn.
		if st.tab.Has(h, e) {
			if hd := e.holdOfLocked(txn); hd != nil {
				m.dropHoldLocked(e, hd)
				st.c.Released++
				m.settleLocked(st, h, e, true, true)
			}
		}
		st.mu.Unlock()
	}
}
