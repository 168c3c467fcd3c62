package shell

import (
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/txntable"
)

// Records keeps, per transaction that has taken a lock since its last
// UnlockAll, what it holds, so that UnlockAll costs what the transaction
// holds. Its stripes' mutexes come after every latch of the manager in
// the lock order: a grant records the hold with its key's latch held.
type Records struct {
	t *txntable.Table[Record]
}

// Record is one transaction's locks in a manager: its holds on point
// Locks in every column family (locktable.Holder.Home is the family's
// index), and the families where it may hold wide locks (a range
// manager's). Guarded by its stripe's Mu.
type Record struct {
	holds locktable.Holds
	wide  []uint16
}

// maxKeptHolds bounds the capacity of the holds list a recycled record
// keeps.
const maxKeptHolds = 256

// NewRecords returns a table of n stripes.
func NewRecords(n int) Records { return Records{txntable.New[Record](n)} }

// recordLocked returns txn's record, creating it; its stripe st is held.
func recordLocked(st *txntable.Stripe[Record], txn txnlock.TxnID) *Record {
	rec, created := st.GetOrCreateLocked(txn)
	if created {
		rec.holds.Txn = txn
	}
	return rec
}

// Grant makes txn hold l in mode (or raises its mode), in the Lock and in
// txn's record, after l.Decide said Grant; home is the family's index.
// l's latch is held.
func (r Records) Grant(l *locktable.Lock, txn txnlock.TxnID, mode txnlock.Mode, home uint16) {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	l.Grant(&recordLocked(st, txn).holds, mode, home)
	st.Mu.Unlock()
}

// GrantWaiter grants w, a waiter of l that l.Grants yielded and whose
// Claim succeeded (locktable.Lock.GrantWaiter), and records the hold. The
// record is made afresh if an UnlockAll took it while w waited, so that
// the next UnlockAll finds the hold. l's latch is held.
func (r Records) GrantWaiter(l *locktable.Lock, w *lockwait.Waiter, home uint16) {
	st := r.t.Stripe(w.Txn())
	st.Mu.Lock()
	l.GrantWaiter(w, &recordLocked(st, w.Txn()).holds, home)
	st.Mu.Unlock()
}

// Release removes txn's hold on l, from the Lock and from txn's record
// (which stays, perhaps empty, until UnlockAll), and reports false if txn
// does not hold l. It grants nothing. l's latch is held.
func (r Records) Release(l *locktable.Lock, txn txnlock.TxnID) bool {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	ok := l.Release(txn)
	st.Mu.Unlock()
	return ok
}

// Holds calls fn for each hold of txn in the family of index home, until
// fn returns false; fn must not change the record. The latches of those
// holds' Locks are held.
func (r Records) Holds(txn txnlock.TxnID, home uint16, fn func(hd *locktable.Holder) bool) {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	if rec := st.GetLocked(txn); rec != nil {
		rec.holds.All(func(hd *locktable.Holder) bool { return hd.Home != home || fn(hd) })
	}
}

// Count returns how many holds txn has, in every family.
func (r Records) Count(txn txnlock.TxnID) int {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	if rec := st.GetLocked(txn); rec != nil {
		return rec.holds.Len()
	}
	return 0
}

// NoteWide records that txn may hold wide locks in the family of index
// home, before it can acquire one there.
func (r Records) NoteWide(txn txnlock.TxnID, home uint16) {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	if rec := recordLocked(st, txn); !slices.Contains(rec.wide, home) {
		rec.wide = append(rec.wide, home)
	}
	st.Mu.Unlock()
}

// Wide reports whether txn may hold wide locks in the family of index
// home, and the families of its record.
func (r Records) Wide(txn txnlock.TxnID, home uint16) bool {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	rec := st.GetLocked(txn)
	return rec != nil && slices.Contains(rec.wide, home)
}

// Next is UnlockAll's step: what txn still holds, to release next. It
// returns the Lock of its last hold, with what hash says of that Lock's
// key (its hash and stripe, read while the hold keeps the key stable) and
// its family's index; or, once it
// holds no point, a family where it may hold wide locks (wide true),
// forgotten by the record from now on; or done, its record recycled for
// another transaction. The caller releases what it got under its latches
// and calls Next again: a grant may give txn more meanwhile.
func (r Records) Next(txn txnlock.TxnID, hash func(key string) (uint64, int)) (l *locktable.Lock, h uint64, stripe int, home uint16, wide, done bool) {
	st := r.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	rec := st.GetLocked(txn)
	switch {
	case rec == nil:
		return nil, 0, 0, 0, false, true
	case rec.holds.Len() > 0:
		hd := rec.holds.Last()
		h, stripe = hash(hd.Lock().Key())
		return hd.Lock(), h, stripe, hd.Home, false, false
	case len(rec.wide) > 0:
		home = rec.wide[len(rec.wide)-1]
		rec.wide = rec.wide[:len(rec.wide)-1]
		return nil, 0, 0, home, true, false
	}
	// No Lock points to it any more: keep it, with its buffers, for the
	// stripe's next transaction.
	st.DeleteLocked(txn)
	rec.holds.Reset(maxKeptHolds)
	rec.wide = rec.wide[:0]
	st.RecycleLocked(rec)
	return nil, 0, 0, 0, false, true
}

// Txns returns, in id order, the transactions that touch the family of
// index home (Touches). The family's latches are held.
func (r Records) Txns(home uint16) []txnlock.TxnID {
	var ids []txnlock.TxnID
	for i := 0; i < r.t.Len(); i++ {
		st := r.t.At(i)
		st.Mu.Lock()
		st.AllLocked(func(id txnlock.TxnID, rec *Record) bool {
			found := slices.Contains(rec.wide, home)
			rec.holds.All(func(hd *locktable.Holder) bool {
				found = found || hd.Home == home
				return !found
			})
			if found {
				ids = append(ids, id)
			}
			return true
		})
		st.Mu.Unlock()
	}
	slices.Sort(ids)
	return ids
}

// Clear forgets every record (Close).
func (r Records) Clear() {
	for i := 0; i < r.t.Len(); i++ {
		st := r.t.At(i)
		st.Mu.Lock()
		st.ClearLocked()
		st.Mu.Unlock()
	}
}

// Len returns the number of live records (invariant checks).
func (r Records) Len() int {
	n := 0
	for i := 0; i < r.t.Len(); i++ {
		st := r.t.At(i)
		st.Mu.Lock()
		n += st.LenLocked()
		st.Mu.Unlock()
	}
	return n
}

// Recorded reports whether hd is at its slot in its transaction's live
// record (invariant checks). The latch of hd's Lock is held.
func (r Records) Recorded(hd *locktable.Holder) bool {
	st := r.t.Stripe(hd.Txn())
	st.Mu.Lock()
	defer st.Mu.Unlock()
	rec := st.GetLocked(hd.Txn())
	return hd.InHolds() && rec != nil && &rec.holds == hd.List()
}
