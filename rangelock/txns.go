package rangelock

import (
	mbits "math/bits"
	"runtime"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/txntable"
)

// txnTable remembers, per transaction, which stripes of which families it
// may hold locks in, so that UnlockAll visits only those. It errs on the
// side of too much: a stripe stays noted after a single Unlock, and a wide
// request is noted before it runs. A point is noted, with its stripe held,
// when the transaction gets its first point lock in the stripe.
type txnTable struct {
	t *txntable.Table[txnLocks]
}

// txnLocks is one transaction's record, guarded by its txntable stripe.
type txnLocks struct {
	fams []*famTouch
}

// famTouch is what a transaction touched in one family.
type famTouch struct {
	f       *family
	wide    bool     // it requested a wide range (or was escalated)
	stripes []uint64 // bit i: it requested a point in stripe i
}

func (tt *txnTable) init() {
	tt.t = txntable.New[txnLocks](4 * runtime.GOMAXPROCS(0))
}

// note records that txn requests a lock in stripe (wideStripe: every
// stripe) of f.
func (tt *txnTable) note(txn txnlock.TxnID, f *family, stripe int) {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	rec, _ := st.GetOrCreateLocked(txn)
	var t *famTouch
	for _, x := range rec.fams {
		if x.f == f {
			t = x
			break
		}
	}
	if t == nil {
		t = &famTouch{f: f}
		rec.fams = append(rec.fams, t)
	}
	if stripe == wideStripe {
		t.wide = true
	} else {
		w := stripe / 64
		if w >= len(t.stripes) {
			t.stripes = append(t.stripes, make([]uint64, w+1-len(t.stripes))...)
		}
		t.stripes[w] |= 1 << (stripe % 64)
	}
	st.Mu.Unlock()
}

// hasWide reports whether txn may hold wide locks in f.
func (tt *txnTable) hasWide(txn txnlock.TxnID, f *family) bool {
	st := tt.t.Stripe(txn)
	st.Mu.Lock()
	defer st.Mu.Unlock()
	if rec := st.GetLocked(txn); rec != nil {
		for _, x := range rec.fams {
			if x.f == f {
				return x.wide
			}
		}
	}
	return false
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

// forEachStripe calls fn for every stripe index noted in t.
func (t *famTouch) forEachStripe(fn func(i int)) {
	for w, bits := range t.stripes {
		for bits != 0 {
			i := mbits.TrailingZeros64(bits)
			bits &^= 1 << i
			fn(w*64 + i)
		}
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
			for _, x := range rec.fams {
				if x.f == f {
					ids = append(ids, id)
					break
				}
			}
			return true
		})
		st.Mu.Unlock()
	}
	slices.Sort(ids)
	return ids
}
