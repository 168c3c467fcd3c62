package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
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

// reset empties rec for another transaction, keeping the buffers of its
// first family's inline point lists (a transaction's lists are empty
// once it is fully released).
func (rec *txnLocks) reset() {
	t := &rec.first
	for i := range t.n {
		t.inline[i].idx = 0
		t.inline[i].list.Reset(maxKeptPoints)
	}
	t.f, t.wide, t.n, t.extra = nil, false, 0, nil
	rec.more = nil
}

// maxKeptPoints bounds the capacity of a point list that a recycled
// record keeps.
const maxKeptPoints = 256

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
	// An entry per stripe it asked for points in: the first ones
	// inline (idxs[i] is inline[i].idx, packed for the search of
	// pointsOf), the rest in extra.
	n      int
	idxs   [8]int32
	inline [8]stripePoints
	extra  []*stripePoints
}

// numStripes is the number of t's per-stripe entries.
func (t *famTouch) numStripes() int { return t.n + len(t.extra) }

// stripeAt returns t's per-stripe entry i, 0 <= i < numStripes().
func (t *famTouch) stripeAt(i int) *stripePoints {
	if i < t.n {
		return &t.inline[i]
	}
	return t.extra[i-t.n]
}

// stripes calls fn for each of t's per-stripe entries.
func (t *famTouch) stripes(fn func(sp *stripePoints)) {
	for i := range t.n {
		fn(&t.inline[i])
	}
	for _, sp := range t.extra {
		fn(sp)
	}
}

// stripePoints is a transaction's entry for one stripe. idx is
// immutable while the record lives; list, its point locks there, is
// guarded by that stripe's mutex and emptied by UnlockAll. list's buffer
// stays with the record when the table recycles it.
type stripePoints struct {
	idx  int
	list locktable.Holds
}

// init sizes the table like the families: as many shards as stripes.
func (tt *txnTable) init(shards int) {
	tt.t = txntable.New[txnLocks](shards)
}

// recordLocked returns txn's record, creating it. The txntable stripe st
// is held.
func recordLocked(st *txntable.Stripe[txnLocks], txn txnlock.TxnID) *txnLocks {
	rec, _ := st.GetOrCreateLocked(txn)
	return rec
}

// touchLocked returns txn's famTouch for f, creating what is missing. The
// txntable stripe st is held.
func touchLocked(st *txntable.Stripe[txnLocks], txn txnlock.TxnID, f *family) *famTouch {
	return recordLocked(st, txn).touch(f)
}

// touch returns rec's famTouch for f, creating it if missing. rec's
// txntable stripe is held.
func (rec *txnLocks) touch(f *family) *famTouch {
	if rec.first.f == f {
		return &rec.first
	}
	if rec.first.f == nil {
		rec.first.f = f
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
	t := recordLocked(st, txn).touch(f)
	for i := range t.n {
		if t.idxs[i] == int32(idx) {
			st.Mu.Unlock()
			return &t.inline[i]
		}
	}
	for _, sp := range t.extra {
		if sp.idx == idx {
			st.Mu.Unlock()
			return sp
		}
	}
	var sp *stripePoints
	if t.n < len(t.inline) {
		sp = &t.inline[t.n]
		t.idxs[t.n] = int32(idx)
		t.n++
	} else {
		sp = &stripePoints{}
		t.extra = append(t.extra, sp)
	}
	sp.idx = idx
	sp.list.Txn = txn
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
		var sps []*stripePoints
		t.stripes(func(sp *stripePoints) { sps = append(sps, sp) })
		return sps
	}
	return nil
}

// holdsPointsIn reports whether txn holds a point in f. The stripes of
// f are held.
func (tt *txnTable) holdsPointsIn(txn txnlock.TxnID, f *family) bool {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	held := false
	if t := findLocked(st, txn, f); t != nil {
		t.stripes(func(sp *stripePoints) { held = held || sp.list.Len() > 0 })
	}
	return held
}

// families returns the families txn touched.
func (tt *txnTable) families(txn txnlock.TxnID) []*family {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	var fs []*family
	if rec := st.GetLocked(txn); rec != nil {
		rec.touches(func(t *famTouch) { fs = append(fs, t.f) })
	}
	return fs
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

// recycle hands rec, taken by take and fully released, back to the table
// for a later transaction. Nothing refers to it any more: every stripe's
// cache of it (lastSP) was cleared when its points were released, and a
// request of txn that raced with the release found it gone from the table
// and made a new one.
func (tt *txnTable) recycle(txn txnlock.TxnID, rec *txnLocks) {
	rec.reset()
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	st.RecycleLocked(rec)
	st.Mu.Unlock()
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
