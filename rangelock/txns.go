package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/txntable"
)

// txnTable remembers, per transaction, which stripes of which families it
// may hold locks in, so that UnlockAll visits only those. It errs on the
// side of too much: a stripe stays noted after a single Unlock or a failed
// request, and a wide request is noted before it runs. A point request
// notes its stripe, with the stripe held, the first time the transaction
// asks for a point there (see stripe.txnPointsLocked).
type txnTable struct {
	t *txntable.Table[txnLocks]
}

// txnLocks is one transaction's record, guarded by its txntable stripe.
// The first family it touches, and the point lists of its first few
// stripes there, are inline: a short transaction costs one allocation.
type txnLocks struct {
	first famTouch
	more  []*famTouch
}

// touches calls fn for each family the transaction touched.
func (rec *txnLocks) touches(fn func(t *famTouch)) {
	if rec.first.f != nil {
		fn(&rec.first)
	}
	for _, t := range rec.more {
		fn(t)
	}
}

// famTouch is what a transaction touched in one family.
type famTouch struct {
	f    *family
	wide bool // it requested a wide range (or was escalated)
	// points has an entry per stripe it took point locks in.
	points    []*stripePoints
	pointsArr [8]stripePoints // the first entries, inline
}

// stripePoints is a transaction's entry for one stripe. idx is
// immutable; tp, the list of its point locks there, is guarded by that
// stripe's mutex: set from the stripe's free list on the first lock,
// handed back by UnlockAll.
type stripePoints struct {
	idx int
	tp  *txnPoints
}

// init sizes the table like the families: as many shards as stripes.
func (tt *txnTable) init(shards int) {
	tt.t = txntable.New[txnLocks](shards)
}

// touchLocked returns txn's famTouch for f, creating what is missing. The
// txntable stripe st is held.
func touchLocked(st *txntable.Stripe[txnLocks], txn txnlock.TxnID, f *family) *famTouch {
	rec, _ := st.GetOrCreateLocked(txn)
	if rec.first.f == f {
		return &rec.first
	}
	if rec.first.f == nil {
		rec.first.f = f
		rec.first.points = nil
		return &rec.first
	}
	for _, x := range rec.more {
		if x.f == f {
			return x
		}
	}
	t := &famTouch{f: f}
	rec.more = append(rec.more, t)
	return t
}

// findLocked returns txn's famTouch for f, or nil. The txntable stripe is
// held.
func findLocked(st *txntable.Stripe[txnLocks], txn txnlock.TxnID, f *family) *famTouch {
	rec := st.GetLocked(txn)
	if rec == nil {
		return nil
	}
	if rec.first.f == f {
		return &rec.first
	}
	for _, x := range rec.more {
		if x.f == f {
			return x
		}
	}
	return nil
}

// noteWide records that txn requests (or, escalated, holds) a wide range
// in f: its UnlockAll must visit every stripe of f.
func (tt *txnTable) noteWide(txn txnlock.TxnID, f *family) {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	touchLocked(st, txn, f).wide = true
	st.Mu.Unlock()
}

// pointsOf returns txn's entry for stripe idx of f, creating it (and
// txn's record) if needed. The stripe is held; the entry stays until
// UnlockAll.
func (tt *txnTable) pointsOf(txn txnlock.TxnID, f *family, idx int) *stripePoints {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	t := touchLocked(st, txn, f)
	for _, sp := range t.points {
		if sp.idx == idx {
			st.Mu.Unlock()
			return sp
		}
	}
	var sp *stripePoints
	if n := len(t.points); n < len(t.pointsArr) {
		sp = &t.pointsArr[n]
	} else {
		sp = &stripePoints{}
	}
	sp.idx = idx
	t.points = append(t.points, sp)
	st.Mu.Unlock()
	return sp
}

// pointsIn returns txn's entries in f, one per stripe it used. Their tp
// fields may be read with the stripes held.
func (tt *txnTable) pointsIn(txn txnlock.TxnID, f *family) []*stripePoints {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	if t := findLocked(st, txn, f); t != nil {
		return slices.Clone(t.points)
	}
	return nil
}

// hasWide reports whether txn may hold wide locks in f.
func (tt *txnTable) hasWide(txn txnlock.TxnID, f *family) bool {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	t := findLocked(st, txn, f)
	return t != nil && t.wide
}

// take removes and returns txn's record, or nil.
func (tt *txnTable) take(txn txnlock.TxnID) *txnLocks {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	rec := st.GetLocked(txn)
	if rec != nil {
		st.DeleteLocked(txn)
	}
	return rec
}

// clear forgets every record (Close).
func (tt *txnTable) clear() {
	for i := 0; i < tt.t.Len(); i++ {
		st := tt.t.At(i)
		st.Mu.Lock()
		st.ClearLocked()
		st.Mu.Unlock()
	}
}

// inFamily returns the transactions that have touched f, in id order.
// Callers hold f's stripes (the lock order puts the table after them).
func (tt *txnTable) inFamily(f *family) []txnlock.TxnID {
	var ids []txnlock.TxnID
	for i := 0; i < tt.t.Len(); i++ {
		st := tt.t.At(i)
		st.Mu.Lock()
		st.AllLocked(func(id txnlock.TxnID, rec *txnLocks) bool {
			if findLocked(st, id, f) != nil {
				ids = append(ids, id)
			}
			return true
		})
		st.Mu.Unlock()
	}
	slices.Sort(ids)
	return ids
}
