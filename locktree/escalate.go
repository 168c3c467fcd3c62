package locktree

import (
	"cmp"
	"slices"

	"github.com/txnlock/txnlock"
)

// Escalate trades precision for memory: for each transaction, it joins
// runs of its neighbouring Exclusive ranges into one range that also covers
// the keys between them, until Memory() <= budget or nothing more can be
// joined. It returns the number of joins (a run of n ranges joined into one
// counts n-1).
//
// Two of txn's ranges are neighbours when txn holds nothing between them.
// They are joined only if
//   - both are Exclusive,
//   - no other transaction holds any key between them (a join never creates
//     a conflict with a held lock), and
//   - barrier, if not nil, returns false for them. The caller uses it for
//     what the tree does not know, such as keys between left and right that
//     a waiting request wants. left may already be the result of joins.
//
// Every key txn held it still holds, in at least the same mode. The
// transactions holding the most ranges go first (ties by TxnID), and each
// transaction's ranges are joined left to right, so the outcome is
// deterministic. Cost: O(h log n) per transaction with h segments.
func (t *Tree) Escalate(budget int64, barrier func(left, right txnlock.Range) bool) int {
	if t.mem <= budget {
		return 0
	}
	ids := t.ids[:0]
	for id := range t.txns {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b txnlock.TxnID) int {
		if c := cmp.Compare(t.txns[b].pieces, t.txns[a].pieces); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	joins := 0
	for _, id := range ids {
		if t.mem <= budget {
			break
		}
		joins += t.escalateTxn(id, budget, barrier)
	}
	t.ids = scratch(ids)
	return joins
}

// escalateTxn joins txn's neighbouring Exclusive ranges left to right
// until Memory() <= budget.
func (t *Tree) escalateTxn(txn txnlock.TxnID, budget int64, barrier func(left, right txnlock.Range) bool) int {
	hs := t.heldBy(txn, true)
	joins := 0
	for i := 0; i+1 < len(hs) && t.mem > budget; i++ {
		left, right := &hs[i], &hs[i+1]
		if left.mode != txnlock.Exclusive || right.mode != txnlock.Exclusive || !t.empty(left.end, right.start) {
			continue
		}
		if barrier != nil && barrier(rangeOf(left.start, left.end), rangeOf(right.start, right.end)) {
			continue
		}
		t.rewrite(txn, left.end, right.start, 0, func(txnlock.Mode) txnlock.Mode { return txnlock.Exclusive })
		right.start = left.start
		joins++
	}
	t.held = scratch(hs)
	return joins
}

// empty reports whether no segment overlaps [lo, hi).
func (t *Tree) empty(lo, hi pos) bool {
	found := false
	t.overlapping(lo, hi, func(*seg) bool {
		found = true
		return false
	})
	return !found
}
