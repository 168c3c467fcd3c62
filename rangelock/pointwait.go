package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// The point requests waiting on a key are queued in its locktable.Lock,
// which decides, in queue order, which of them a release lets through
// (Lock.Grants); what the Lock does not know — the wide locks in the
// stripe's locktree and the wide waiters — the stripe tells it.
//
// Point waiters of one key share one detector resource, as in pointlock:
// its blockers are the key's holders (point holders and the holders of
// overlapping wide locks; Lock.Det keeps it). That is exact for deadlock
// detection by the contraction argument of txnlock.Detector: a point
// waiter with no wide waiter ahead of it waits for the key's holders and
// for the same-key waiters queued ahead, and those wait for nothing but
// the key's holders (or for same-key waiters ahead of them, which wait for
// the holders), so the queue adds no cycle the holders do not close. A
// release then costs one SetBlockers for the key, not one per waiter.
//
// A point waiter that finds an overlapping wide waiter queued ahead of it
// (which may wait for other keys' holders) keeps a resource of its own
// with its exact blockers, as wide waiters do (waiter.shared is false);
// wide waiters queued later never get ahead of it, so the choice made when
// it queues stays right.

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

// sharedResourceLocked returns the detector resource shared by l's
// waiters, creating it with the key's holders as blockers. s, l's stripe,
// is held; the manager has a detector.
func (f *family) sharedResourceLocked(s *stripe, l *locktable.Lock) txnlock.ResourceID {
	det := l.Det()
	if det.Res == 0 {
		det.Res = f.m.det.NewResource()
		det.Told = s.keyHoldersLocked(l, det.Told[:0])
		f.m.det.SetBlockers(det.Res, det.Told)
	}
	return det.Res
}

// keyHoldersLocked appends to dst every holder of l's key, in any mode,
// once each, sorted: its point holders and the holders of wide locks over
// it. s is held.
func (s *stripe) keyHoldersLocked(l *locktable.Lock, dst []txnlock.TxnID) []txnlock.TxnID {
	base := len(dst)
	dst = l.AppendHolders(dst)
	if s.tree.Len() > 0 {
		// Exclusive conflicts with every mode; txn 0 is nobody.
		s.tree.Conflicts(0, txnlock.Point(l.KeyBytes()), txnlock.Exclusive, func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
			dst = append(dst, owner)
			return true
		})
	}
	return sortUnique(dst, base)
}

// refreshKeyLocked tells the detector about a changed set of holders of
// l's key, if its waiters share a resource. s is held.
func (f *family) refreshKeyLocked(s *stripe, l *locktable.Lock) {
	if l.Queued() == 0 {
		return
	}
	det := l.Det()
	if det.Res == 0 {
		return
	}
	var buf [8]txnlock.TxnID
	if hs := s.keyHoldersLocked(l, buf[:0]); !slices.Equal(hs, det.Told) {
		det.Told = append(det.Told[:0], hs...)
		f.m.det.SetBlockers(det.Res, det.Told)
	}
}

// refreshQueueLocked refreshes what the detector knows of l's waiters
// (without granting any): the shared resource's blockers, and those of
// the waiters with a resource of their own. s is held.
func (f *family) refreshQueueLocked(s *stripe, l *locktable.Lock) {
	if f.m.det == nil || l.Queued() == 0 {
		return
	}
	f.refreshKeyLocked(s, l)
	if l.Det().Own == 0 {
		return
	}
	for lw := l.Front(); lw != nil; lw = lw.Next() {
		if w := waiterOf(lw); !w.shared {
			f.refreshLocked(w)
		}
	}
}

// recheckQueueLocked re-checks the point waiters of l, after something on
// its key was released or a waiter left: it grants, in queue order, each
// that l's Grants lets through, then refreshes the detector. What keeps a
// waiter outside l (blocked): a conflicting wide lock, and, for a waiter
// with a resource of its own that is not an upgrade, a conflicting wide
// waiter queued before it. The walk stops as soon as no later waiter can
// be granted (a key held Exclusive, by a point or a wide lock, stops it
// at the first blocked waiter), so a waiter that leaves a long queue
// costs O(1), not a scan of it. A closed family grants nothing. s is
// held.
func (f *family) recheckQueueLocked(s *stripe, l *locktable.Lock) {
	if f.dead != nil {
		return
	}
	var blocked func(*lockwait.Waiter) bool
	xOutside := false
	if s.tree.Len() > 0 || (l.Queued() > 0 && l.Det().Own > 0) {
		key := txnlock.Point(l.KeyBytes())
		xOutside = s.tree.Len() > 0 && s.tree.HasConflict(0, key, txnlock.Shared)
		blocked = func(lw *lockwait.Waiter) bool {
			w := waiterOf(lw)
			return (s.tree.Len() > 0 && s.tree.HasConflict(w.txn, key, w.mode)) ||
				(!w.shared && !w.upgrade && f.wideConflictAheadLocked(&w.request, w.seq))
		}
	}
	for lw := range l.Grants(blocked, xOutside) {
		if lw.Claim() {
			f.grantPointWaiterLocked(s, l, waiterOf(lw))
		}
	}
	f.refreshQueueLocked(s, l)
}

// grantPointWaiterLocked grants w, a point waiter of l that Grants
// yielded and whose Claim succeeded: it records the hold (in l and in the
// transaction's Holds), counts it, and wakes w. s is held.
func (f *family) grantPointWaiterLocked(s *stripe, l *locktable.Lock, w *waiter) {
	lw := w.lw
	since := lw.Since
	// The transaction's record may have been taken by an UnlockAll that
	// ran while w waited (a closing engine releases every transaction):
	// register the grant afresh so that the next UnlockAll finds it; the
	// woken waiter may call UnlockAll at once, and it reads the record
	// under the transaction table's lock, not ours.
	s.grantPointLocked(l, s.txnPointsLocked(w.txn), w.mode, lw)
	s.counters.Acquired++
	s.counters.EndWait(nil, since, f.m.clock.Now())
	s.syncMemLocked(&f.m.mem)
	if det := f.m.det; det != nil && !w.shared {
		// The waiter unblocks itself when it wakes (lockwait.Waiter.Wait).
		det.DropResource(lw.Resource)
	}
	f.leftQueueLocked(l, w)
	// Touch lw no more after Wake: its goroutine may recycle it at once
	// (lockwait.Waiter.Release).
	lw.Wake()
}

// leftQueueLocked does the bookkeeping of l's detector state once point
// waiter w is out of l's queue (granted or gone): w's count if it had a
// resource of its own, and the shared resource once the queue is empty.
func (f *family) leftQueueLocked(l *locktable.Lock, w *waiter) {
	det := l.Det()
	if !w.shared {
		det.Own--
	}
	if l.Queued() == 0 && det.Res != 0 {
		f.m.det.DropResource(det.Res)
		det.Res, det.Told = 0, det.Told[:0]
	}
}
