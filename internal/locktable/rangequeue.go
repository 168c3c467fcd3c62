package locktable

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// RangeQueue is a column family's waiting range requests (any range but
// one key, whose requests wait in their key's Lock): FIFO, and found by
// overlap in O(log W + k) for W waiters and k found, where a walk of the
// list costs O(W). A contended load of many small ranges keeps thousands
// of range requests waiting, and every release, grant decision and
// re-check asks which of them overlap something. A waiter's range is its
// Lock.Range, which must not change while it is queued; seq is the order
// in which its owner queued it, unique in the family. Its owner's latch
// guards it.
//
// The index is a treap ordered by (start bound, seq) in which each node
// keeps the greatest end bound of its subtree, so a search skips every
// subtree that ends before the range starts, and the least seq of its
// subtree, so a search for the waiters queued before a seq skips every
// subtree queued after it (a deadlock search asks mostly about old
// waiters, and most of what overlaps them queued later).
type RangeQueue struct {
	q    lockwait.Queue
	root *rangeNode
	rnd  uint64 // xorshift state for priorities
}

type rangeNode struct {
	w           *lockwait.Waiter
	seq         uint64
	prio        uint64
	maxEnd      txnlock.Bound // the greatest end bound in the subtree
	minSeq      uint64        // the least seq in the subtree
	left, right *rangeNode
}

// Len returns the number of queued waiters, failed ones not yet gone
// included.
func (x *RangeQueue) Len() int { return x.q.Len() }

// Front returns the first queued waiter, or nil; Next walks on.
func (x *RangeQueue) Front() *lockwait.Waiter { return x.q.Front() }

// PushBack queues w, queued by its owner as number seq, at the back.
func (x *RangeQueue) PushBack(w *lockwait.Waiter, seq uint64) {
	x.q.PushBack(w)
	if x.rnd == 0 {
		x.rnd = 0x9e3779b97f4a7c15
	}
	x.rnd ^= x.rnd << 13
	x.rnd ^= x.rnd >> 7
	x.rnd ^= x.rnd << 17
	n := &rangeNode{w: w, seq: seq, prio: x.rnd}
	n.fix()
	x.root = insertNode(x.root, n)
}

// Remove unlinks w, queued as number seq.
func (x *RangeQueue) Remove(w *lockwait.Waiter, seq uint64) {
	x.q.Remove(w)
	x.root = removeNode(x.root, w, w.Lock.Range.Start(), seq)
}

// Overlapping calls fn for every waiter queued before seq (^uint64(0):
// every waiter) whose range overlaps r, failed ones not yet gone
// included, in (start, seq) order, until fn returns false; fn must not
// change the queue.
func (x *RangeQueue) Overlapping(r txnlock.Range, seq uint64, fn func(w *lockwait.Waiter) bool) {
	overlapNode(x.root, r, seq, fn)
}

// before orders (start, seq) pairs.
func before(aStart txnlock.Bound, aSeq uint64, b *rangeNode) bool {
	if c := aStart.Compare(b.w.Lock.Range.Start()); c != 0 {
		return c < 0
	}
	return aSeq < b.seq
}

func (n *rangeNode) fix() {
	n.maxEnd, n.minSeq = n.w.Lock.Range.End(), n.seq
	for _, c := range [2]*rangeNode{n.left, n.right} {
		if c != nil {
			if c.maxEnd.Compare(n.maxEnd) > 0 {
				n.maxEnd = c.maxEnd
			}
			n.minSeq = min(n.minSeq, c.minSeq)
		}
	}
}

func insertNode(t, n *rangeNode) *rangeNode {
	if t == nil {
		return n
	}
	if before(n.w.Lock.Range.Start(), n.seq, t) {
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

func removeNode(t *rangeNode, w *lockwait.Waiter, start txnlock.Bound, seq uint64) *rangeNode {
	switch {
	case t == nil:
		return nil
	case t.w == w:
		return mergeNodes(t.left, t.right)
	case before(start, seq, t):
		t.left = removeNode(t.left, w, start, seq)
	default:
		t.right = removeNode(t.right, w, start, seq)
	}
	t.fix()
	return t
}

func mergeNodes(a, b *rangeNode) *rangeNode {
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

func overlapNode(t *rangeNode, r txnlock.Range, seq uint64, fn func(w *lockwait.Waiter) bool) bool {
	// A range overlaps r iff it starts before r ends and ends after r
	// starts: a subtree whose greatest end is not after r's start has
	// none.
	if t == nil || t.minSeq >= seq || t.maxEnd.Compare(r.Start()) <= 0 {
		return true
	}
	if !overlapNode(t.left, r, seq, fn) {
		return false
	}
	tr := t.w.Lock.Range
	if tr.Start().Compare(r.End()) >= 0 {
		return true // t and everything to its right start at or after r's end
	}
	if t.seq < seq && tr.End().Compare(r.Start()) > 0 && !fn(t.w) {
		return false
	}
	return overlapNode(t.right, r, seq, fn)
}
