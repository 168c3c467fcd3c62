package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
)

// escalate shrinks the lock memory of f: it takes every latch of f (the
// world of f stops) and replaces each transaction's runs of adjacent
// Exclusive locks by one wide lock each.
//
// Adjacent means adjacent in the whole family: the locks of a run may sit
// in different stripes, and between two of them there is no lock of
// another transaction (in any stripe), no waiting request of another
// transaction, and no EscalationBarrier. The merged lock therefore
// conflicts with nothing it did not conflict with before; it only covers
// keys nobody else holds or waits for. A run is merged only if that saves
// segments: two locks or more.
func (f *family) escalate() {
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return
	}
	f.orderPointsLocked() // mayJoinLocked scans points by range
	f.escalations++
	f.newEpochLocked()
	for _, txn := range f.m.sh.Txns.Txns(f.idx) {
		for _, run := range f.exclusiveRunsLocked(txn) {
			hull, err := txnlock.NewRange(run[0].Start(), run[len(run)-1].End())
			if err != nil {
				panic("rangelock: internal error: escalation hull: " + err.Error())
			}
			f.acquireWideLocked(txn, hull, txnlock.Exclusive)
			f.releasePointsInLocked(txn, hull) // covered now
		}
	}
	for i := range f.stripes {
		f.stripes[i].syncMemExactLocked(&f.m.mem)
	}
	f.syncTreeMemLocked()
}

// exclusiveRunsLocked returns txn's runs of Exclusive ranges that
// escalation may merge (see escalate), each as its ranges in key order.
// Every stripe is held.
func (f *family) exclusiveRunsLocked(txn txnlock.TxnID) [][]txnlock.Range {
	// What txn holds Exclusive, in the family as a whole, and how many
	// segments that costs now.
	var xs []txnlock.Range
	f.tree.Holds(txn, func(r txnlock.Range, m txnlock.Mode) bool {
		if m == txnlock.Exclusive {
			xs = append(xs, r)
		}
		return true
	})
	f.pointsOfLocked(txn, func(l *locktable.Lock, m txnlock.Mode) bool {
		if m == txnlock.Exclusive {
			xs = append(xs, txnlock.Point(l.KeyBytes()))
		}
		return true
	})
	xs = mergeRanges(xs)
	var runs [][]txnlock.Range
	var run []txnlock.Range
	flush := func() {
		if len(run) >= 2 { // one segment for two or more
			runs = append(runs, run)
		}
		run = nil
	}
	for i, r := range xs {
		if i > 0 && !f.mayJoinLocked(txn, xs[i-1], r) {
			flush()
		}
		run = append(run, r)
	}
	flush()
	return runs
}

// mayJoinLocked reports whether escalation may merge txn's Exclusive
// ranges left < right across the gap between them.
func (f *family) mayJoinLocked(txn txnlock.TxnID, left, right txnlock.Range) bool {
	if b := f.m.opts.EscalationBarrier; b != nil && b(f.id, left, right) {
		return false
	}
	gap, err := txnlock.NewRange(left.End(), right.Start())
	if err != nil {
		return true // touching: no key between them
	}
	other := false
	stop := func(txnlock.TxnID, txnlock.Range, txnlock.Mode) bool {
		other = true
		return false
	}
	if f.tree.Conflicts(txn, gap, txnlock.Exclusive, stop); other {
		return false
	}
	if f.ascendPointsLocked(gap, func(l *locktable.Lock) bool {
		other = l.Conflicts(txn, txnlock.Exclusive)
		return !other
	}); other {
		return false
	}
	// Nobody else may be waiting in the gap either.
	probe := request{txn: txn, r: gap, mode: txnlock.Exclusive, stripe: wideStripe}
	if f.conflictAheadLocked(&probe, newRequest) {
		return false
	}
	return true
}

// mergeRanges sorts rs and merges overlapping and touching ranges.
func mergeRanges(rs []txnlock.Range) []txnlock.Range {
	slices.SortFunc(rs, func(a, b txnlock.Range) int { return a.Start().Compare(b.Start()) })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start().Compare(out[n-1].End()) <= 0 {
			if r.End().Compare(out[n-1].End()) > 0 {
				out[n-1], _ = txnlock.NewRange(out[n-1].Start(), r.End())
			}
			continue
		}
		out = append(out, r)
	}
	return out
}
