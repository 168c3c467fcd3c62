package rangelock

import "github.com/txnlock/txnlock"

// wideIndex finds the wide waiters of a family that overlap a range, in
// O(log W + k) for W waiters and k found, where a walk of the family's
// FIFO list costs O(W): a contended load of many small ranges keeps
// thousands of wide requests waiting, and every release, grant decision
// and re-check asks which of them overlap something.
//
// It is a treap ordered by (start bound, seq) in which each node keeps the
// greatest end bound of its subtree, so a search skips every subtree that
// ends before the range starts, and the least seq of its subtree, so a
// search for the waiters queued before a seq skips every subtree queued
// after it (a deadlock search asks mostly about old waiters, and most of
// what overlaps them queued later). Guarded like family.wide: changed
// with every latch held, read with any one.
type wideIndex struct {
	root *wideNode
	rnd  uint64 // xorshift state for priorities
}

type wideNode struct {
	w           *waiter
	prio        uint64
	maxEnd      txnlock.Bound // the greatest end bound in the subtree
	minSeq      uint64        // the least seq in the subtree
	left, right *wideNode
}

// before orders waiters by start bound, then by seq (unique).
func before(a, b *waiter) bool {
	if c := a.r.Start().Compare(b.r.Start()); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (n *wideNode) fix() {
	n.maxEnd, n.minSeq = n.w.r.End(), n.w.seq
	if n.left != nil {
		if n.left.maxEnd.Compare(n.maxEnd) > 0 {
			n.maxEnd = n.left.maxEnd
		}
		n.minSeq = min(n.minSeq, n.left.minSeq)
	}
	if n.right != nil {
		if n.right.maxEnd.Compare(n.maxEnd) > 0 {
			n.maxEnd = n.right.maxEnd
		}
		n.minSeq = min(n.minSeq, n.right.minSeq)
	}
}

// insert adds w.
func (x *wideIndex) insert(w *waiter) {
	if x.rnd == 0 {
		x.rnd = 0x9e3779b97f4a7c15
	}
	x.rnd ^= x.rnd << 13
	x.rnd ^= x.rnd >> 7
	x.rnd ^= x.rnd << 17
	n := &wideNode{w: w, prio: x.rnd}
	n.fix()
	x.root = insertNode(x.root, n)
}

func insertNode(t, n *wideNode) *wideNode {
	if t == nil {
		return n
	}
	if before(n.w, t.w) {
		t.left = insertNode(t.left, n)
		if t.left.prio > t.prio {
			l := t.left
			t.left, l.right = l.right, t
			t.fix()
			l.fix()
			return l
		}
	} else {
		t.right = insertNode(t.right, n)
		if t.right.prio > t.prio {
			r := t.right
			t.right, r.left = r.left, t
			t.fix()
			r.fix()
			return r
		}
	}
	t.fix()
	return t
}

// remove drops w; a no-op if w is not in the index.
func (x *wideIndex) remove(w *waiter) { x.root = removeNode(x.root, w) }

func removeNode(t *wideNode, w *waiter) *wideNode {
	switch {
	case t == nil:
		return nil
	case t.w == w:
		return mergeNodes(t.left, t.right)
	case before(w, t.w):
		t.left = removeNode(t.left, w)
	default:
		t.right = removeNode(t.right, w)
	}
	t.fix()
	return t
}

func mergeNodes(a, b *wideNode) *wideNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = mergeNodes(a.right, b)
		a.fix()
		return a
	default:
		b.left = mergeNodes(a, b.left)
		b.fix()
		return b
	}
}

// overlapping calls fn for every waiter queued before seq (newRequest:
// every waiter) whose range overlaps r, in (start, seq) order, until fn
// returns false; fn must not change the index.
func (x *wideIndex) overlapping(r txnlock.Range, seq uint64, fn func(w *waiter) bool) {
	overlapNode(x.root, r, seq, fn)
}

func overlapNode(t *wideNode, r txnlock.Range, seq uint64, fn func(w *waiter) bool) bool {
	// A range overlaps r iff it starts before r ends and ends after r
	// starts: a subtree whose greatest end is not after r's start has
	// none.
	if t == nil || t.minSeq >= seq || t.maxEnd.Compare(r.Start()) <= 0 {
		return true
	}
	if !overlapNode(t.left, r, seq, fn) {
		return false
	}
	if t.w.r.Start().Compare(r.End()) >= 0 {
		return true // t and everything to its right start at or after r's end
	}
	if t.w.seq < seq && t.w.r.End().Compare(r.Start()) > 0 && !fn(t.w) {
		return false
	}
	return overlapNode(t.right, r, seq, fn)
}
