package rangelock

import (
	"cmp"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// wideStripe is request.stripe for a wide request.
const wideStripe = -1

// request is one lock request: a caller's, or a waiter's.
type request struct {
	txn  txnlock.TxnID
	r    txnlock.Range
	mode txnlock.Mode
	// key and stripe: the key of a point request and its stripe;
	// stripe is wideStripe for a wide request.
	key    []byte
	h      uint64 // keytable hash of key
	stripe int
	// upgrade: the transaction holds all of r Shared and asks for
	// Exclusive; it waits for the other holders only, not for the queue.
	upgrade bool
	// tp is the transaction's list of point locks in the stripe of a
	// point request.
	tp *txnPoints
}

func (q *request) point() bool { return q.stripe != wideStripe }

// waiter is a queued request. It is lockwait.Waiter.Ext of lw. Its fields
// are guarded by the lock(s) that guard its queue: its stripe's mutex for a
// point waiter, every stripe mutex for a wide one.
type waiter struct {
	request
	lw  *lockwait.Waiter
	seq uint64 // position in the family's waiting order
	kq  *keyQueue
	// shared: a point waiter that had no overlapping wide waiter ahead
	// when it queued; it waits on its key queue's detector resource
	// (kq.res) and is re-checked by recheckQueueLocked's scan. Otherwise
	// (wide, or a wide waiter ahead) lw.Resource is its own and blockers
	// is what the detector was last told about it.
	shared   bool
	blockers []txnlock.TxnID
}

func waiterOf(lw *lockwait.Waiter) *waiter { return lw.Ext.(*waiter) }

// newRequest is the seq of a request that is not queued: every queued
// waiter is ahead of it.
const newRequest = ^uint64(0)

// blockersLocked appends to dst the transactions that keep q (at queue
// position seq) from being granted now: the holders of incompatible
// overlapping locks, then, unless q is an upgrade, the transactions of the
// still waiting, incompatible, overlapping requests queued ahead of it
// (a transaction that is both is listed once, as a holder). Each part is
// sorted by TxnID so that reports do not depend on stripes. This is the
// detector's view of a waiter with a resource of its own (every conflict);
// Status and error reports list the nearest ones (waitsForLocked). The
// stripe of a point request is held; every stripe for a wide request.
func (f *family) blockersLocked(q *request, seq uint64, dst []txnlock.TxnID) []txnlock.TxnID {
	base := len(dst)
	dst = f.holderConflictsLocked(q, dst)
	if q.upgrade {
		return dst
	}
	mid := len(dst)
	for _, w := range f.queuedAheadLocked(q, seq) {
		if !q.mode.Compatible(w.mode) {
			dst = append(dst, w.txn)
		}
	}
	dst = sortUnique(dst, mid)
	// A transaction that is both a holder and queued ahead is a holder.
	queued := slices.DeleteFunc(dst[mid:], func(t txnlock.TxnID) bool {
		_, held := slices.BinarySearch(dst[base:mid], t)
		return held
	})
	return dst[:mid+len(queued)]
}

// holderConflictsLocked appends to dst, sorted and once each, the holders
// other than q.txn of locks that overlap q and conflict with it. The stripe
// of a point request is held; every stripe for a wide request.
func (f *family) holderConflictsLocked(q *request, dst []txnlock.TxnID) []txnlock.TxnID {
	base := len(dst)
	add := func(owner txnlock.TxnID) { dst = append(dst, owner) }
	addHeld := func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
		dst = append(dst, owner)
		return true
	}
	if q.point() {
		s := &f.stripes[q.stripe]
		if pl := s.pointGetLocked(q.h, q.key); pl != nil {
			pl.conflicts(q.txn, q.mode, add)
		}
		if s.tree.Len() > 0 {
			s.tree.Conflicts(q.txn, q.r, q.mode, addHeld)
		}
	} else {
		// Every stripe has a copy of the wide locks; the points are
		// spread over the stripes.
		f.stripes[0].tree.Conflicts(q.txn, q.r, q.mode, addHeld)
		for i := range f.stripes {
			f.stripes[i].ascendPointsLocked(q.r, func(pl *pointLock) bool {
				pl.conflicts(q.txn, q.mode, add)
				return true
			})
		}
	}
	return sortUnique(dst, base)
}

// aheadLocked calls fn for every active waiter of another transaction
// queued ahead of seq that overlaps q, until fn returns false: the waiters
// of q's key and the wide waiters for a point request; every overlapping
// waiter for a wide one. The order is queue by queue (callers that need
// queue order sort by seq).
func (f *family) aheadLocked(q *request, seq uint64, fn func(w *waiter) bool) {
	more := true
	if q.point() {
		if kq := f.stripes[q.stripe].queueFor(q.h, q.key); kq != nil {
			more = eachAhead(&kq.q, q, seq, fn)
		}
	}
	if more && f.wide.Len() > 0 {
		f.wideIdx.overlapping(q.r, func(w *waiter) bool {
			if w.seq < seq && w.txn != q.txn && w.lw.Active() {
				more = fn(w)
			}
			return more
		})
	}
	if !more || q.point() {
		return
	}
	for i := range f.stripes {
		f.stripes[i].ascendWaitingLocked(q.r, func(kq *keyQueue) bool {
			more = eachAhead(&kq.q, q, seq, fn)
			return more
		})
		if !more {
			return
		}
	}
}

// eachAhead calls fn for the waiters of queue that are ahead of seq, still
// waiting, of another transaction and overlapping q, until fn returns
// false; it reports whether fn asked for more.
func eachAhead(queue *lockwait.Queue, q *request, seq uint64, fn func(w *waiter) bool) bool {
	for lw := queue.Front(); lw != nil; lw = lw.Next() {
		w := waiterOf(lw)
		if w.seq >= seq {
			return true // queues are in seq order
		}
		if w.txn != q.txn && lw.Active() && w.r.Overlaps(q.r) && !fn(w) {
			return false
		}
	}
	return true
}

// conflictAheadLocked reports whether an active, incompatible request of
// another transaction overlapping q is queued ahead of seq. It stops at
// the first one, so a new request on a hot key pays O(1), not a walk of
// its queue.
func (f *family) conflictAheadLocked(q *request, seq uint64) bool {
	found := false
	f.aheadLocked(q, seq, func(w *waiter) bool {
		found = !q.mode.Compatible(w.mode)
		return !found
	})
	return found
}

// queuedAheadLocked returns the waiters that aheadLocked visits (active,
// of other transactions, overlapping q, queued ahead of seq), in queue
// order, less those that q skips: a wide request never waits for a queued
// request that cannot be granted before its transaction releases something
// (waitsfor.Skipped; among the waiters that overlap it: widening a held
// lock past queued requests that wait for it is the case). A point
// request skips nothing here: an upgrade skips the whole queue by its
// flag, and finding the wide waiters that wait for a point request's
// transaction would take every stripe. q's lock(s) are held.
func (f *family) queuedAheadLocked(q *request, seq uint64) []*waiter {
	var ws []*waiter
	conflict := false
	f.aheadLocked(q, seq, func(w *waiter) bool {
		ws = append(ws, w)
		conflict = conflict || !q.mode.Compatible(w.mode)
		return true
	})
	slices.SortFunc(ws, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	if q.point() || !conflict {
		return ws
	}
	held := f.m.txns.pointsIn(q.txn, f)
	queued := make([]waitsfor.Queued, len(ws))
	any := false
	for i, w := range ws {
		waitsForT := f.conflictsWithTxnLocked(w, q.txn, held)
		queued[i] = waitsfor.Queued{Txn: w.txn, Mode: w.mode, Range: w.r, WaitsForT: waitsForT}
		any = any || waitsForT
	}
	if !any {
		return ws
	}
	skip := waitsfor.Skipped(queued)
	kept := ws[:0]
	for i, w := range ws {
		if !skip[i] {
			kept = append(kept, w)
		}
	}
	return kept
}

// conflictsWithTxnLocked reports whether waiter w conflicts with a lock
// txn holds: one of its wide locks, or one of its points (held: its lists
// of them). It looks at txn's own locks, not at every lock w overlaps.
// Every stripe is held.
func (f *family) conflictsWithTxnLocked(w *waiter, txn txnlock.TxnID, held []*stripePoints) bool {
	found := false
	if tree := f.stripes[0].tree; tree.Len() > 0 {
		tree.Conflicts(w.txn, w.r, w.mode, func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
			found = owner == txn
			return !found
		})
	}
	for _, sp := range held {
		for _, pl := range sp.list.locks {
			if found {
				return true
			}
			found = w.r.Contains(pl.key()) && !pl.modeOf(txn).Compatible(w.mode)
		}
	}
	return found
}

// blockedLocked reports whether q (a request not yet queued) must wait: a
// conflicting holder, or, unless q is an upgrade, a conflicting request
// queued ahead (FIFO) that it does not skip (skippedLocked).
func (f *family) blockedLocked(q *request) bool {
	if q.point() {
		s := &f.stripes[q.stripe]
		if s.pointGetLocked(q.h, q.key).hasConflictOrNil(q.txn, q.mode) ||
			(s.tree.Len() > 0 && s.tree.HasConflict(q.txn, q.r, q.mode)) {
			return true
		}
	} else if len(f.holderConflictsLocked(q, nil)) > 0 {
		return true
	}
	if q.upgrade || !f.conflictAheadLocked(q, newRequest) {
		return false
	}
	if q.point() {
		return true
	}
	for _, w := range f.queuedAheadLocked(q, newRequest) {
		if !q.mode.Compatible(w.mode) {
			return true
		}
	}
	return false
}

// waitsForLocked appends to dst whom q, at queue position seq, waits for,
// by internal/waitsfor's rule (what Status and a timeout's error report):
// its nearest conflicting requests ahead, else its conflicting holders.
// last is the waiter directly ahead of q in its key's queue, for a point
// request (nil: none): with no wide waiter in the family the walk goes
// back from it to the nearest Exclusive request and no further, so a
// timeout on a hot key does not walk its queue.
func (f *family) waitsForLocked(q *request, seq uint64, last *lockwait.Waiter, dst []txnlock.TxnID) []txnlock.TxnID {
	if !q.upgrade && q.point() && f.wide.Len() == 0 {
		n := len(dst)
		back := func(yield func(int, waitsfor.Request) bool) {
			i := 0
			for lw := range lockwait.Backward(last) {
				if w := waiterOf(lw); !yield(i, waitsfor.Request{Txn: w.txn, Mode: w.mode, Upgrade: w.upgrade}) {
					return
				}
				i++
			}
		}
		if dst = waitsfor.Nearest(dst, back, q.txn, q.mode); len(dst) > n {
			return dst
		}
		return f.holderConflictsLocked(q, dst)
	}
	if !q.upgrade {
		ahead := f.queuedAheadLocked(q, seq)
		back := func(yield func(int, waitsfor.Request) bool) {
			for i := len(ahead) - 1; i >= 0; i-- {
				w := ahead[i]
				if !yield(i, waitsfor.Request{Txn: w.txn, Mode: w.mode, Upgrade: w.upgrade}) {
					return
				}
			}
		}
		n := len(dst)
		if dst = waitsfor.Nearest(dst, back, q.txn, q.mode); len(dst) > n {
			return dst
		}
	}
	return f.holderConflictsLocked(q, dst)
}

func sortUnique(dst []txnlock.TxnID, base int) []txnlock.TxnID {
	slices.Sort(dst[base:])
	return append(dst[:base], slices.Compact(dst[base:])...)
}

// recheckLocked re-evaluates waiter w after something it overlaps was
// released or left the queue: it grants w if nothing blocks it any more,
// else it tells the detector about a changed set of blockers. It reports
// whether w was granted. w's lock(s) are held.
func (f *family) recheckLocked(w *waiter) bool {
	if !w.lw.Active() {
		return false // failed: its goroutine unlinks it and re-checks
	}
	var buf [8]txnlock.TxnID
	b := f.blockersLocked(&w.request, w.seq, buf[:0])
	if len(b) == 0 {
		return f.grantLocked(w)
	}
	if !slices.Equal(b, w.blockers) {
		w.blockers = slices.Clone(b)
		if det := f.m.det; det != nil {
			det.SetBlockers(w.lw.Resource, w.blockers)
		}
	}
	return false
}

// refreshLocked tells the detector about a changed set of blockers of
// waiter w, without granting it (callers that iterate queues use it when
// nothing was released, so nothing can become grantable). w's lock(s) are
// held.
func (f *family) refreshLocked(w *waiter) {
	det := f.m.det
	if det == nil || !w.lw.Active() {
		return
	}
	if w.shared {
		f.refreshKeyLocked(&f.stripes[w.stripe], w.kq)
		return
	}
	var buf [8]txnlock.TxnID
	if b := f.blockersLocked(&w.request, w.seq, buf[:0]); len(b) > 0 && !slices.Equal(b, w.blockers) {
		w.blockers = slices.Clone(b)
		det.SetBlockers(w.lw.Resource, w.blockers)
	}
}

// refreshAfterUpgradeLocked refreshes the blockers of the waiters that an
// upgrade of q just granted may block: Shared requests overlapping q.r
// that were not waiting for q.txn before. For a point, the waiters of its
// key (the wide waiters that overlap it are re-checked by the caller, with
// every stripe held); for a wide range, every overlapping waiter. q's
// lock(s) are held.
func (f *family) refreshAfterUpgradeLocked(q *request, kq *keyQueue) {
	if f.m.det == nil {
		return
	}
	if q.point() {
		if kq != nil {
			f.refreshQueueLocked(&f.stripes[q.stripe], kq)
		}
		return
	}
	for i := range f.stripes {
		s := &f.stripes[i]
		s.ascendWaitingLocked(q.r, func(kq *keyQueue) bool {
			f.refreshQueueLocked(s, kq)
			return true
		})
	}
	var ws []*waiter
	f.wideIdx.overlapping(q.r, func(w *waiter) bool {
		ws = append(ws, w)
		return true
	})
	for _, w := range ws {
		f.refreshLocked(w)
	}
}

// grantLocked grants waiter w: it acquires w's range, unlinks w and ends
// its wait. It returns false, changing nothing, if w already failed. w's
// lock(s) are held.
func (f *family) grantLocked(w *waiter) bool {
	lw := w.lw
	if !lw.Active() {
		return false
	}
	if !lw.Claim() {
		return false // failed meanwhile: its goroutine unlinks it
	}
	// The waiter sleeps until Wake: record the grant first. The
	// transaction's record may have been taken by an UnlockAll that ran
	// while w waited (a closing engine releases every transaction):
	// register the grant afresh so that the next UnlockAll finds it; the
	// woken waiter may call UnlockAll at once, and it reads the record
	// under the transaction table's lock, not ours.
	if w.point() {
		w.tp = f.stripes[w.stripe].txnPointsLocked(w.txn)
	} else {
		f.m.txns.noteWide(w.txn, f)
	}
	since, res := lw.Since, lw.Resource
	if w.point() {
		w.kq.q.Remove(lw)
	} else {
		f.wide.Remove(lw)
		f.wideIdx.remove(w)
	}
	now := f.m.clock.Now()
	det := f.m.det
	if det != nil && !w.shared {
		// The waiter unblocks itself when it wakes (lockwait.Waiter.Wait).
		det.DropResource(res)
	}
	if w.point() {
		s := &f.stripes[w.stripe]
		s.acquirePointLocked(w.txn, w.tp, w.h, w.key, w.mode)
		s.counters.Acquired++
		s.counters.EndWait(nil, since, now)
		s.syncMemLocked(&f.m.mem)
		f.leaveQueueLocked(w)
	} else {
		f.acquireWideLocked(w.txn, w.r, w.mode)
		f.wideCounters.Acquired++
		f.wideCounters.EndWait(nil, since, now)
	}
	// Touch lw no more after Wake: its goroutine may recycle it at once
	// (lockwait.Waiter.Release). w itself is not recycled.
	lw.Wake()
	if det != nil && w.upgrade {
		f.refreshAfterUpgradeLocked(&w.request, w.kq)
	}
	return true
}

// acquireWideLocked stores wide range r in every stripe. Every stripe is
// held.
func (f *family) acquireWideLocked(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) {
	f.wideSeen = true
	for i := range f.stripes {
		s := &f.stripes[i]
		s.tree.Acquire(txn, r, mode)
		s.syncMemLocked(&f.m.mem)
	}
	if f.m.det != nil {
		// Point waiters on keys in r now wait for txn too.
		for i := range f.stripes {
			s := &f.stripes[i]
			s.ascendWaitingLocked(r, func(kq *keyQueue) bool {
				f.refreshKeyLocked(s, kq)
				return true
			})
		}
	}
}

// unlinkLocked removes point waiter w, already unblocked in the
// detector, from its key queue, and the queue from the stripe's index
// (with its shared detector resource) once empty.
func (f *family) unlinkLocked(w *waiter) {
	w.kq.q.Remove(w.lw)
	f.leaveQueueLocked(w)
}

// leaveQueueLocked is unlinkLocked for a point waiter whose Waiter is
// already out of the key queue (granted): the rest of the bookkeeping.
func (f *family) leaveQueueLocked(w *waiter) {
	kq := w.kq
	if !w.shared {
		kq.own--
	}
	if kq.q.Len() == 0 {
		if kq.res != 0 {
			f.m.det.DropResource(kq.res)
			kq.res, kq.holders = 0, nil
		}
		f.stripes[w.stripe].deleteQueueLocked(kq)
	}
}
