package locktree

import (
	"github.com/txnlock/txnlock"
)

// Conflicts calls fn for every lock that blocks txn from taking r in mode:
// each range held by a transaction other than txn that overlaps r (ends as
// r says) in a mode incompatible with mode. held is the owner's range
// clipped to r: a maximal run of keys of r that owner holds in heldMode.
// Calls come in key order of held's start, then by owner, until fn returns
// false. Cost: O(log n + k) for k segments overlapping r (times their
// owners). The ranges passed to fn are copies the caller may keep.
func (t *Tree) Conflicts(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode, fn func(owner txnlock.TxnID, held txnlock.Range, heldMode txnlock.Mode) bool) {
	if !r.Valid() {
		return
	}
	t.walkRuns(posOf(r.Start()), posOf(r.End()),
		func(owner txnlock.TxnID, m txnlock.Mode) bool { return owner != txn && !mode.Compatible(m) },
		func(owner txnlock.TxnID, start, end pos, m txnlock.Mode) bool {
			return fn(owner, rangeOf(start, end), m)
		})
}

// HasConflict reports whether Conflicts would call fn at least once. It
// stops at the first conflicting segment and allocates nothing.
func (t *Tree) HasConflict(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) bool {
	if !r.Valid() {
		return false
	}
	found := false
	t.overlapping(posOf(r.Start()), posOf(r.End()), func(s *seg) bool {
		for i, n := 0, s.nmembers(); i < n; i++ {
			if owner, m, _ := s.memberAt(i); owner != txn && !mode.Compatible(m) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// Covered reports whether txn holds every key of r (ends as r says) in mode
// or a stronger one, so that acquiring it again would change nothing.
// Cost: O(log n + k) for k segments overlapping r.
func (t *Tree) Covered(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) bool {
	if !r.Valid() || t.txns[txn] == nil {
		return false
	}
	lo, hi := posOf(r.Start()), posOf(r.End())
	next := lo // the first position not yet known to be covered
	t.overlapping(lo, hi, func(s *seg) bool {
		if s.start().cmp(next) > 0 || !s.modeOf(txn).Covers(mode) {
			return false
		}
		next = s.end()
		return next.cmp(hi) < 0
	})
	return next.cmp(hi) >= 0
}

// Lock is one transaction's held range, as Ascend reports it.
type Lock struct {
	Owner txnlock.TxnID
	Range txnlock.Range
	Mode  txnlock.Mode
}

// Ascend calls fn for every held lock, one call per owner and range (the
// ranges Holds reports), ordered by range start, then owner, until fn
// returns false. Shared ranges of several transactions come out as they
// were acquired, endpoints and all. Ranges are copies the caller may keep.
// Cost: O(n) for n segments (times their owners).
func (t *Tree) Ascend(fn func(l Lock) bool) {
	t.walkRuns(pos{}, pos{inf: true},
		func(txnlock.TxnID, txnlock.Mode) bool { return true },
		func(owner txnlock.TxnID, start, end pos, m txnlock.Mode) bool {
			return fn(Lock{Owner: owner, Range: rangeOf(start, end), Mode: m})
		})
}

// run is an owner's maximal run of keys of one mode, being assembled by
// walkRuns.
type run struct {
	start, end pos
	owner      txnlock.TxnID
	mode       txnlock.Mode
	closed     bool
}

// walkRuns is the one walker behind Conflicts and Ascend. It visits the
// segments that overlap [lo, hi) and calls emit, for each owner that keep
// accepts, with each maximal run of keys in [lo, hi) that the owner holds in
// one mode, ordered by (start, owner), until emit returns false.
//
// A run is complete when a segment no longer continues it, but an earlier
// starting run may still be open; completed runs wait in t.runs until every
// run that starts before them is complete.
func (t *Tree) walkRuns(lo, hi pos, keep func(txnlock.TxnID, txnlock.Mode) bool, emit func(owner txnlock.TxnID, start, end pos, m txnlock.Mode) bool) {
	open := t.runs[:0]
	head := 0 // open[head:] are not emitted yet
	stopped := false
	var prevEnd pos
	flush := func() {
		for head < len(open) && open[head].closed && !stopped {
			r := &open[head]
			stopped = !emit(r.owner, r.start, r.end, r.mode)
			head++
		}
		if head == len(open) {
			open, head = open[:0], 0
		}
	}
	t.overlapping(lo, hi, func(s *seg) bool {
		start, end := maxPos(s.start(), lo), minPos(s.end(), hi)
		touching := len(open) > 0 && prevEnd.cmp(start) == 0
		// Extend the runs s continues; close the others.
		for i := head; i < len(open); i++ {
			r := &open[i]
			if r.closed {
				continue
			}
			if touching && s.modeOf(r.owner) == r.mode {
				r.end = end
			} else {
				r.closed = true
			}
		}
		// Open runs for the owners s starts.
		for i, n := 0, s.nmembers(); i < n; i++ {
			owner, m, _ := s.memberAt(i)
			if !keep(owner, m) || (touching && continues(open[head:], owner, end)) {
				continue
			}
			open = append(open, run{start: start, end: end, owner: owner, mode: m})
		}
		prevEnd = end
		flush()
		return !stopped
	})
	for i := head; i < len(open); i++ {
		open[i].closed = true
	}
	flush()
	t.runs = scratch(open)
}

// continues reports whether an open run of owner was just extended to end.
func continues(open []run, owner txnlock.TxnID, end pos) bool {
	for i := range open {
		if r := &open[i]; !r.closed && r.owner == owner && r.end.cmp(end) == 0 {
			return true
		}
	}
	return false
}
