package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// Point waiters of one key share one detector resource, as in pointlock:
// its blockers are the key's holders (point holders and the holders of
// overlapping wide locks). That is exact for deadlock detection by the
// contraction argument of txnlock.Detector: a point waiter with no wide
// waiter ahead of it waits for the key's holders and for the same-key
// waiters queued ahead, and those wait for nothing but the key's holders
// (or for earlier same-key waiters, which wait for the holders), so the
// queue adds no cycle the holders do not close. A release then costs one
// SetBlockers for the key, not one per waiter, and re-checking the queue
// is one scan (recheckQueueLocked) instead of a blocker list per waiter.
//
// A point waiter that finds an overlapping wide waiter queued ahead of it
// (which may wait for other keys' holders) keeps a resource of its own
// with its exact blockers, as wide waiters do; waiters queued later never
// get ahead of it, so the choice made when it queues stays right.

// wideWaiterOverlapsLocked reports whether a wide waiter (any: active or
// failed but not yet unlinked) overlaps r. Any stripe is held.
func (f *family) wideWaiterOverlapsLocked(r txnlock.Range) bool {
	found := false
	f.wideIdx.overlapping(r, func(*waiter) bool {
		found = true
		return false
	})
	return found
}

// sharedResourceLocked returns kq's shared detector resource, creating it
// with the key's holders as blockers. s, kq's stripe, is held; the
// manager has a detector.
func (f *family) sharedResourceLocked(s *stripe, kq *keyQueue) txnlock.ResourceID {
	if kq.res == 0 {
		kq.res = f.m.det.NewResource()
		kq.holders = s.keyHoldersLocked(kq, nil)
		f.m.det.SetBlockers(kq.res, kq.holders)
	}
	return kq.res
}

// keyHoldersLocked appends to dst every holder of kq's key, in any mode,
// once each, sorted. s is held.
func (s *stripe) keyHoldersLocked(kq *keyQueue, dst []txnlock.TxnID) []txnlock.TxnID {
	if pl := s.pointGetLocked(kq.h, kq.key); pl != nil {
		for i := range pl.nHolders() {
			dst = append(dst, pl.holder(i).txn)
		}
	}
	if s.tree.Len() > 0 {
		// Exclusive conflicts with every mode; txn 0 is nobody.
		s.tree.Conflicts(0, txnlock.Point(kq.key), txnlock.Exclusive, func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
			if !slices.Contains(dst, owner) {
				dst = append(dst, owner)
			}
			return true
		})
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// refreshKeyLocked tells the detector about a changed set of holders of
// kq's key, if its waiters share a resource. s is held.
func (f *family) refreshKeyLocked(s *stripe, kq *keyQueue) {
	if kq.res == 0 {
		return
	}
	var buf [8]txnlock.TxnID
	if hs := s.keyHoldersLocked(kq, buf[:0]); !slices.Equal(hs, kq.holders) {
		kq.holders = slices.Clone(hs)
		f.m.det.SetBlockers(kq.res, kq.holders)
	}
}

// refreshQueueLocked refreshes what the detector knows of kq's waiters
// (without granting any). s is held.
func (f *family) refreshQueueLocked(s *stripe, kq *keyQueue) {
	f.refreshKeyLocked(s, kq)
	if kq.own == 0 {
		return
	}
	for lw := kq.q.Front(); lw != nil; lw = lw.Next() {
		if w := waiterOf(lw); !w.shared {
			f.refreshLocked(w)
		}
	}
}

// recheckQueueLocked re-checks the waiters of a key queue in order, after
// something on the key was released or a waiter left: it grants each that
// nothing blocks any more, then refreshes the detector. A shared waiter is
// blocked by a conflicting holder or by an earlier, still queued,
// incompatible waiter of another transaction (upgrades only by holders);
// the scan keeps a summary of the earlier waiters instead of listing them
// for each, and stops, unless waiters with resources of their own need
// their blockers refreshed, as soon as no later waiter can be granted:
// once two transactions wait Exclusive ahead, or at the first blocked
// waiter while the key is held Exclusive (by a point or a wide lock). So a
// waiter that leaves a long queue costs O(1), not a scan of the queue.
// A closed family grants nothing. s is held.
func (f *family) recheckQueueLocked(s *stripe, kq *keyQueue) {
	if f.dead != nil {
		return
	}
	xHeld := s.pointGetLocked(kq.h, kq.key).hasConflictOrNil(0, txnlock.Shared) ||
		(s.tree.Len() > 0 && s.tree.HasConflict(0, txnlock.Point(kq.key), txnlock.Shared))
	var ahead queueAhead
	for lw := kq.q.Front(); lw != nil; {
		next := lw.Next()
		w := waiterOf(lw)
		blocked := false
		switch {
		case !lw.Active():
		case !w.shared:
			if !f.recheckLocked(w) {
				ahead.add(w.txn, w.mode)
				blocked = true
			}
		case (!w.upgrade && ahead.blocks(w.txn, w.mode)) || s.holderConflictLocked(&w.request):
			ahead.add(w.txn, w.mode)
			blocked = true
		default:
			f.grantLocked(w) // false if it failed just now: not ahead either
		}
		if (ahead.xMulti || (blocked && xHeld)) && kq.own == 0 {
			break
		}
		lw = next
	}
	if kq.q.Len() > 0 {
		f.refreshKeyLocked(s, kq)
	}
}

// holderConflictLocked reports whether a holder other than q.txn holds
// q's key (point or inside a wide lock) in a mode incompatible with
// q.mode. s, q's stripe, is held.
func (s *stripe) holderConflictLocked(q *request) bool {
	return s.pointGetLocked(q.h, q.key).hasConflictOrNil(q.txn, q.mode) ||
		(s.tree.Len() > 0 && s.tree.HasConflict(q.txn, q.r, q.mode))
}

// queueAhead summarizes the waiters a queue scan has passed that are still
// waiting: which transactions (one, or several) wait in any mode, and
// which wait Exclusive.
type queueAhead struct {
	any, x           txnlock.TxnID
	anyMulti, xMulti bool
}

func (a *queueAhead) add(txn txnlock.TxnID, mode txnlock.Mode) {
	note := func(one *txnlock.TxnID, multi *bool) {
		if *one == 0 {
			*one = txn
		} else if *one != txn {
			*multi = true
		}
	}
	note(&a.any, &a.anyMulti)
	if mode == txnlock.Exclusive {
		note(&a.x, &a.xMulti)
	}
}

// blocks reports whether a waiter passed so far is of another transaction
// than txn and incompatible with mode.
func (a *queueAhead) blocks(txn txnlock.TxnID, mode txnlock.Mode) bool {
	if mode == txnlock.Exclusive {
		return a.anyMulti || (a.any != 0 && a.any != txn)
	}
	return a.xMulti || (a.x != 0 && a.x != txn)
}
