package pointlock

import (
	"iter"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// entry is one locked (or requested) key of one column family. It lives in
// its stripe's table from the first request until the last holder and the last
// waiter are gone. Every field is guarded by the stripe mutex, except the
// hold fields marked otherwise.
//
// Its memory layout is drawn in the package doc (Memory).
//
// The first holder is embedded (h), so an uncontended lock is one 48-byte
// object plus its key bytes. Invariant: h.rec == nil iff the key has no
// holder; when the embedded holder leaves, a shared holder from more moves
// into h. Exclusive is only ever held by a sole holder, which is then h.
type entry struct {
	keytable.Entry // the key; first, as keytable.Table requires
	x              *extra
	h              hold
}

// hold is one transaction's lock on one entry. It is linked in two places:
// in the entry (embedded h or extra.more) under the stripe mutex, and in the
// transaction's record (txnRecord.holds[slot]) under the transaction
// stripe's mutex. Its address is stable while it is linked in both.
type hold struct {
	e   *entry     // the entry held; immutable
	rec *txnRecord // the holder; guarded by the stripe mutex (written under both)
	// slot is the index of this hold in rec.holds; guarded by the mutex of
	// the transaction stripe of rec.txn.
	slot  int32
	mode  txnlock.Mode // guarded by the stripe mutex
	cfIdx uint16       // the column family's registry index; immutable
}

// extra is the part of an entry that only shared or contended keys need.
type extra struct {
	more []*hold        // shared holders after h, in grant order
	q    lockwait.Queue // waiters, FIFO; upgrades at the front
	res  txnlock.ResourceID
	// ref is [key, key] over a copy of the entry's key, for the lock
	// references of waiters (the detector's reports keep them, so they
	// cannot share the entry's recycled buffer). Made for the first
	// waiter with a detector, kept while the entry keeps its key.
	ref txnlock.Range
}

// ext returns e.x, allocating it on first use.
func (e *entry) ext() *extra {
	if e.x == nil {
		e.x = &extra{}
	}
	return e.x
}

// holdOfLocked returns txn's hold on e, or nil.
func (e *entry) holdOfLocked(txn txnlock.TxnID) *hold {
	if e.h.rec == nil {
		return nil
	}
	if e.h.rec.txn == txn {
		return &e.h
	}
	if e.x != nil {
		for _, h := range e.x.more {
			if h.rec.txn == txn {
				return h
			}
		}
	}
	return nil
}

// grantableLocked reports whether holders other than txn allow txn to hold
// e in mode (the queue is not considered).
func (e *entry) grantableLocked(txn txnlock.TxnID, mode txnlock.Mode) bool {
	if e.h.rec == nil {
		return true
	}
	if e.x == nil || len(e.x.more) == 0 {
		// Sole holder.
		return e.h.rec.txn == txn || (mode == txnlock.Shared && e.h.mode == txnlock.Shared)
	}
	// Several holders: all Shared.
	return mode == txnlock.Shared
}

// waitersLocked reports whether any request still waits for e (failed
// waiters that have not yet unlinked themselves do not count).
func (e *entry) waitersLocked() bool {
	if e.x == nil {
		return false
	}
	for w := e.x.q.Front(); w != nil; w = w.Next() {
		if w.Active() {
			return true
		}
	}
	return false
}

// lastWaiterLocked returns the waiter at the back of e's queue, or nil.
func (e *entry) lastWaiterLocked() *lockwait.Waiter {
	if e.x == nil {
		return nil
	}
	return e.x.q.Back()
}

// emptyLocked reports whether e has neither holders nor linked waiters.
func (e *entry) emptyLocked() bool {
	return e.h.rec == nil && (e.x == nil || e.x.q.Len() == 0)
}

// holdersLocked appends the holders of e to dst.
func (e *entry) holdersLocked(dst []txnlock.TxnID) []txnlock.TxnID {
	if e.h.rec == nil {
		return dst
	}
	dst = append(dst, e.h.rec.txn)
	if e.x != nil {
		for _, h := range e.x.more {
			dst = append(dst, h.rec.txn)
		}
	}
	return dst
}

// holdersOfLocked appends e's holders, with their modes, to dst.
func (e *entry) holdersOfLocked(dst []waitsfor.Holder) []waitsfor.Holder {
	if e.h.rec == nil {
		return dst
	}
	dst = append(dst, waitsfor.Holder{Txn: e.h.rec.txn, Mode: e.h.mode})
	if e.x != nil {
		for _, h := range e.x.more {
			dst = append(dst, waitsfor.Holder{Txn: h.rec.txn, Mode: h.mode})
		}
	}
	return dst
}

// waitsForLocked appends to dst whom a request of txn in mode waits for
// (internal/waitsfor's rule) when the nearest waiter queued ahead of it is
// last (nil: none; failed waiters are skipped). It walks the queue back to
// the nearest Exclusive request, no further: an error report, never a
// scan of the whole queue.
func (e *entry) waitsForLocked(dst []txnlock.TxnID, txn txnlock.TxnID, mode txnlock.Mode, upgrade bool, last *lockwait.Waiter) []txnlock.TxnID {
	if !upgrade {
		n := len(dst)
		if dst = waitsfor.Nearest(dst, aheadOf(last), txn, mode); len(dst) > n {
			return dst
		}
	}
	var buf [8]waitsfor.Holder
	return waitsfor.Holders(dst, e.holdersOfLocked(buf[:0]), txn, mode)
}

// aheadOf yields the requests of the active waiters from last to the
// front of its queue.
func aheadOf(last *lockwait.Waiter) iter.Seq2[int, waitsfor.Request] {
	return func(yield func(int, waitsfor.Request) bool) {
		i := 0
		for w := range lockwait.Backward(last) {
			if !yield(i, waitsfor.Request{Txn: w.Txn(), Mode: w.Lock.Mode, Upgrade: w.Upgrade}) {
				return
			}
			i++
		}
	}
}

// firstNonUpgradeLocked is where a new upgrade joins the queue: behind
// earlier upgrades, ahead of every ordinary request.
func (x *extra) firstNonUpgradeLocked() *lockwait.Waiter {
	w := x.q.Front()
	for w != nil && w.Upgrade {
		w = w.Next()
	}
	return w
}
