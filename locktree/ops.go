package locktree

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// Acquire records that txn holds r in mode; the ends of r are as r says
// ([start, end], [start, end), ...). The caller has checked Conflicts: the
// tree records what it is told, it does not arbitrate. Keys are copied.
//
// txn's own ranges merge with r: on every key the stronger of the held and
// requested modes wins, and touching ranges of one mode become one range.
// Other transactions' Shared ranges that overlap r with different endpoints
// stay exactly as they were. Acquiring a range already Covered changes
// nothing.
//
// Acquire ignores a call with an invalid txn, range or mode; the caller
// validates requests before it gets here.
func (t *Tree) Acquire(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) {
	if !txn.Valid() || !r.Valid() || !mode.Valid() {
		return
	}
	t.rewrite(txn, posOf(r.Start()), posOf(r.End()), 0, func(m txnlock.Mode) txnlock.Mode { return m.Max(mode) })
}

// Release removes the keys of r (ends as r says) from what txn holds,
// splitting its ranges where r cuts them. If txn does not hold every key of
// r (in any mode) it returns txnlock.ErrNotHeld and changes nothing; an
// invalid range is txnlock.ErrInvalidRange. fn, if not nil, is called with
// r once the keys are released.
func (t *Tree) Release(txn txnlock.TxnID, r txnlock.Range, fn func(released txnlock.Range)) error {
	if !r.Valid() {
		return txnlock.ErrInvalidRange
	}
	if !t.rewrite(txn, posOf(r.Start()), posOf(r.End()), txnlock.Shared, releaseMode) {
		return txnlock.ErrNotHeld
	}
	if fn != nil {
		fn(r)
	}
	return nil
}

func releaseMode(txnlock.Mode) txnlock.Mode { return 0 }

// ReleaseAll releases everything txn holds, at a cost proportional to what
// it holds: O(h log n) for h segments of txn. fn, if not nil, is called for
// each maximal run of released keys (touching ranges of any mode form one
// run), in key order, with a Range the caller may keep.
func (t *Tree) ReleaseAll(txn txnlock.TxnID, fn func(released txnlock.Range)) {
	if t.txns[txn] == nil {
		return
	}
	runs := t.heldBy(txn, false)
	for _, h := range runs {
		t.rewrite(txn, h.start, h.end, 0, releaseMode)
	}
	if fn != nil {
		for _, h := range runs {
			fn(rangeOf(h.start, h.end))
		}
	}
	t.held = scratch(runs)
}

// Holds calls fn for each range txn holds, with its mode, in key order,
// until fn returns false. Touching ranges of one mode are reported as one
// range. Cost: O(h log h) for h segments of txn.
func (t *Tree) Holds(txn txnlock.TxnID, fn func(r txnlock.Range, m txnlock.Mode) bool) {
	hs := t.heldBy(txn, true)
	for _, h := range hs {
		if !fn(rangeOf(h.start, h.end), h.mode) {
			break
		}
	}
	t.held = scratch(hs)
}

// held is one of a transaction's ranges.
type held struct {
	start, end pos
	mode       txnlock.Mode
}

// heldBy returns txn's holdings in key order in the t.held scratch slice:
// maximal runs of one mode if byMode, else maximal runs of held keys (mode
// then is the strongest in the run).
func (t *Tree) heldBy(txn txnlock.TxnID, byMode bool) []held {
	hs := t.held[:0]
	st := t.txns[txn]
	if st == nil {
		return hs
	}
	sorted := append(t.sorted[:0], st.segs...)
	slices.SortFunc(sorted, func(a, b *seg) int { return a.start().cmp(b.start()) })
	for _, s := range sorted {
		start, end, m := s.start(), s.end(), s.modeOf(txn)
		if n := len(hs) - 1; n >= 0 && hs[n].end.cmp(start) == 0 && (!byMode || hs[n].mode == m) {
			hs[n].end = end
			hs[n].mode = hs[n].mode.Max(m)
			continue
		}
		hs = append(hs, held{start: start, end: end, mode: m})
	}
	t.sorted = scratch(sorted)
	return hs
}
