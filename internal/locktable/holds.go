package locktable

import "github.com/txnlock/txnlock"

// Holds lists one transaction's holds in a set of Locks, so that
// releasing all of them costs what it holds: pointlock keeps one per
// transaction (Holder.Home tells the column families apart), rangelock
// one per transaction and stripe. A latch of the owner guards it, and the
// slots of its Holders (see Holder).
type Holds struct {
	// Txn is the transaction; set by the owner while the list is empty.
	Txn   txnlock.TxnID
	holds []*Holder
}

// Len returns the number of holds.
func (h *Holds) Len() int { return len(h.holds) }

// Last returns the hold taken last, or nil.
func (h *Holds) Last() *Holder {
	if len(h.holds) == 0 {
		return nil
	}
	return h.holds[len(h.holds)-1]
}

// All calls fn for each hold until it returns false; fn must not change
// the list.
func (h *Holds) All(fn func(hd *Holder) bool) {
	for _, hd := range h.holds {
		if !fn(hd) {
			return
		}
	}
}

// remove takes hd out of the list by moving the last hold into its slot.
func (h *Holds) remove(hd *Holder) {
	last := int32(len(h.holds) - 1)
	if hd.slot != last {
		moved := h.holds[last]
		h.holds[hd.slot] = moved
		moved.slot = hd.slot
	}
	h.holds[last] = nil
	h.holds = h.holds[:last]
}

// ReleaseAll releases every hold of h, last taken first, and calls fn
// with each Lock released, so that the owner can grant its waiters or
// drop it, until h is empty (a Lock that fn grants to h's transaction
// itself is released too). Every Lock of h is under one latch the caller
// holds, with h's.
func (h *Holds) ReleaseAll(fn func(l *Lock)) {
	for n := len(h.holds); n > 0; n = len(h.holds) {
		hd := h.holds[n-1]
		h.holds[n-1] = nil
		h.holds = h.holds[:n-1]
		l := hd.lock
		l.unlink(hd)
		fn(l)
	}
}

// Reset empties h for another transaction, keeping its buffer if its
// capacity is at most keep.
func (h *Holds) Reset(keep int) {
	h.Txn = 0
	if cap(h.holds) > keep {
		h.holds = nil
		return
	}
	clear(h.holds[:cap(h.holds)])
	h.holds = h.holds[:0]
}
