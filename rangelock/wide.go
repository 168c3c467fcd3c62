package rangelock

import (
	"cmp"
	"slices"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// Wide requests (any range but [k, k]) run with every latch of the
// family held (lockStripes), which also switches the family between its
// two modes (see Striped and fused in the package doc). They wait in one
// FIFO list per family (family.wide), indexed by range (locktable.RangeQueue); this
// file decides whom a wide request waits for (blockersLocked,
// queuedAheadLocked and its widening rule) and re-checks and grants wide
// waiters.

// lockStripes takes every latch of the family: stripe 0's, and, unless
// the family is fused, the others in ascending order (the lock order).
// Holding stripe 0's latch, fused cannot change.
func (f *family) lockStripes() {
	f.stripes[0].mu.Lock()
	if f.fused.Load() {
		return
	}
	for i := 1; i < len(f.stripes); i++ {
		f.stripes[i].mu.Lock()
	}
}

// unlockStripes releases what lockStripes took, first bringing the mode
// in line with the family's activity: a family with wide activity fuses
// (its ordered index of points stays), one without unfuses (taking the
// other latches, in order after stripe 0's) and drops its ordered index.
func (f *family) unlockStripes() {
	active := f.wideActiveLocked()
	switch fused := f.fused.Load(); {
	case fused && active:
		f.stripes[0].mu.Unlock()
		return
	case fused:
		for i := 1; i < len(f.stripes); i++ {
			f.stripes[i].mu.Lock()
		}
		clear(f.stamps) // kept only while fused (blkcache.go)
		f.fused.Store(false)
	case active:
		f.fused.Store(true)
	}
	if !active {
		f.ordered = nil
	}
	for i := range f.stripes {
		f.stripes[i].mu.Unlock()
	}
}

// lockStripe takes the latch that guards stripe i, its own or stripe 0's
// while the family is fused, and returns it for the caller to unlock. A
// fusion or unfusion between the load of fused and the latch is seen on
// the second load (either needs the latch taken), and the request tries
// again.
func (f *family) lockStripe(i int) *latch.Mutex {
	for {
		fused := f.fused.Load()
		mu := &f.stripes[i].mu
		if fused {
			mu = &f.stripes[0].mu
		}
		mu.Lock()
		if f.fused.Load() == fused {
			return mu
		}
		mu.Unlock()
	}
}

// wideActiveLocked reports whether the family has wide activity: a wide
// lock held or a wide request waiting. Both change only with every latch
// held, so any one suffices to read it. While it holds (once the latches
// are released) the family is fused and keeps an ordered index of points.
func (f *family) wideActiveLocked() bool {
	return f.wide.Len() > 0 || f.tree.Len() > 0
}

// orderPointsLocked builds the family's ordered index of points, if it
// is not there: wide requests and escalation call it before they scan
// points by range. unlockStripes drops it again once the family has no
// wide activity left, so a points-only workload never touches a B-tree of
// points. Every stripe is held.
func (f *family) orderPointsLocked() {
	if f.ordered != nil {
		return
	}
	f.ordered = btree.NewG(16, lockLess)
	for i := range f.stripes {
		f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
			f.ordered.ReplaceOrInsert(l)
			return true
		})
	}
}

// wideBlockedLocked reports whether wide request q, at queue position seq
// (newRequest: not yet queued), must wait: a conflicting holder, or,
// unless q is an upgrade, a conflicting request queued ahead (FIFO) that
// it does not skip (queuedAheadLocked). It stops at the first. (A point
// request asks its key's Lock: pointBlockedLocked.)
func (f *family) wideBlockedLocked(q *request, seq uint64) bool {
	held := false
	f.heldConflictsLocked(q, func(txnlock.TxnID, txnlock.Range, txnlock.Mode) bool {
		held = true
		return false
	})
	if held {
		return true
	}
	if q.upgrade || !f.conflictAheadLocked(q, seq) {
		return false
	}
	for _, w := range f.queuedAheadLocked(q, seq) {
		if !q.mode.Compatible(w.mode) {
			return true
		}
	}
	return false
}

// blockersLocked appends to dst the transactions that keep q (at queue
// position seq) from being granted now: the holders of incompatible
// overlapping locks, then, unless q is an upgrade, the transactions of the
// still waiting, incompatible, overlapping requests queued ahead of it
// (a transaction that is both is listed once, as a holder). Each part is
// sorted by TxnID so that reports do not depend on stripes. This is what
// the detector's Blockers answers for a waiter that is not shared (every
// conflict; see detect.go); Status and error reports list the nearest ones
// (waitsForLocked). The stripe of a point request is held; every stripe
// for a wide request.
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
	f.heldConflictsLocked(q, func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
		dst = append(dst, owner)
		return true
	})
	return sortUnique(dst, base)
}

// heldConflictsLocked calls fn for each lock of another transaction that
// overlaps q and conflicts with it, until fn returns false: its owner, the
// range held (a view fn must not keep), and its mode. An owner may come
// more than once. The stripe of a point request is held; every stripe for
// a wide request.
func (f *family) heldConflictsLocked(q *request, fn func(owner txnlock.TxnID, held txnlock.Range, heldMode txnlock.Mode) bool) {
	more := true
	point := func(l *locktable.Lock) bool {
		held := txnlock.Point(l.KeyBytes())
		l.Holders(func(hd *locktable.Holder) bool {
			if hd.Txn() != q.txn && !q.mode.Compatible(hd.Mode()) {
				more = fn(hd.Txn(), held, hd.Mode())
			}
			return more
		})
		return more
	}
	if f.tree.Len() > 0 {
		f.tree.Conflicts(q.txn, q.r, q.mode, func(owner txnlock.TxnID, r txnlock.Range, m txnlock.Mode) bool {
			more = fn(owner, r, m)
			return more
		})
		if !more {
			return
		}
	}
	if q.point() {
		if l := f.stripes[q.stripe].lockOfLocked(q.h, q.key); l != nil {
			point(l)
		}
		return
	}
	f.ascendPointsLocked(q.r, point) // the points are spread over the stripes
}

// aheadLocked calls fn for every active waiter of another transaction
// ahead of q (at seq) that overlaps q, until fn returns false: the waiters
// of q's key and the wide waiters for a point request; every overlapping
// waiter for a wide one. The order is queue by queue (callers that need
// queue order sort by seq).
func (f *family) aheadLocked(q *request, seq uint64, fn func(w *waiter) bool) {
	more := true
	if q.point() {
		if l := f.stripes[q.stripe].lockOfLocked(q.h, q.key); l != nil {
			more = eachAhead(l, q, seq, fn)
		}
	}
	if more && f.wide.Len() > 0 {
		f.wideOverlapping(q.r, seq, func(w *waiter) bool {
			if w.txn != q.txn && w.lw.Active() {
				more = fn(w)
			}
			return more
		})
	}
	if !more || q.point() {
		return
	}
	f.queuedLocked(q.r, func(l *locktable.Lock) bool {
		return eachAhead(l, q, seq, fn)
	})
}

// eachAhead calls fn for the waiters of l's queue that are ahead of q (at
// seq), still waiting, of another transaction and overlapping q, until fn
// returns false; it reports whether fn asked for more. For a point
// request ahead is the queue's order: the waiters in front of q's own
// (upgrades, at the front, included), or all of them for a new request.
// For a wide request it is seq: an upgrade at the front queued later is
// not ahead of it, and behind the upgrades the queue is in seq order.
func eachAhead(l *locktable.Lock, q *request, seq uint64, fn func(w *waiter) bool) bool {
	for lw := l.Front(); lw != nil; lw = lw.Next() {
		w := waiterOf(lw)
		switch {
		case w.seq == seq:
			return true // q itself: the rest is behind it
		case w.seq > seq && !q.point():
			if lw.Upgrade {
				continue
			}
			return true
		}
		if w.txn != q.txn && lw.Active() && w.r.Overlaps(q.r) && !fn(w) {
			return false
		}
	}
	return true
}

// queueOrder orders waiters as a request behind all of them sees them:
// point upgrades first (each at the front of its key's queue), then by
// seq.
func queueOrder(a, b *waiter) int {
	return cmp.Or(cmpUpgrade(a.upgrade && a.point(), b.upgrade && b.point()), cmp.Compare(a.seq, b.seq))
}

// cmpUpgrade orders upgrades before other requests.
func cmpUpgrade(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
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
// order, less those that q skips (waitsfor.Skipped): the queued requests
// that cannot be granted before q's transaction releases something
// (widening a held lock past queued requests that wait for it, or a
// holder's point request under a wide waiter that waits for it), and, if
// q's transaction holds a lock in f (held one when q queued), the requests
// of transactions that held none when they queued (request.idle). A point
// request skips wide waiters only; the requests on its key keep their
// order in its Lock's queue (so it may still wait in a cycle, which the
// detector breaks). An upgrade skips the whole queue by its flag. q's
// lock(s) are held; for a point request that meets a wide waiter, every
// latch (its family is fused).
func (f *family) queuedAheadLocked(q *request, seq uint64) []*waiter {
	var ws []*waiter
	conflict := false
	f.aheadLocked(q, seq, func(w *waiter) bool {
		ws = append(ws, w)
		conflict = conflict || !q.mode.Compatible(w.mode)
		return true
	})
	slices.SortFunc(ws, queueOrder)
	if !conflict || (q.point() && f.wide.Len() == 0) {
		return ws
	}
	mine := f.txnHoldingsLocked(q.txn)
	holder := len(mine) > 0 // a new request: what its transaction holds now
	if seq != newRequest {
		holder = q.holder
	}
	// q is wide, or a point request that meets wide waiters (its family
	// fused): every latch is held, and with it the family's scratch.
	queued := slices.Grow(f.queuedBuf[:0], len(ws))[:len(ws)]
	defer func() { f.queuedBuf = queued[:0]; clear(queued) }()
	any := false
	for i, w := range ws {
		queued[i] = waitsfor.Queued{Txn: w.txn, Mode: w.mode, Range: w.r, WaitsForT: w.conflictsWithAny(mine), Idle: w.idle}
		any = any || queued[i].WaitsForT || (holder && queued[i].Idle)
	}
	if !any {
		return ws
	}
	skip := waitsfor.Skipped(queued, holder)
	kept := ws[:0]
	for i, w := range ws {
		// A point request skips wide waiters only: the requests on its
		// key stay ahead of it, in its Lock's queue order.
		if !skip[i] || (q.point() && w.point()) {
			kept = append(kept, w)
		}
	}
	return kept
}

// txnHoldingsLocked returns what txn holds in f: its wide ranges and its
// points (a few, in the requests that ask). Every stripe is held.
func (f *family) txnHoldingsLocked(txn txnlock.TxnID) []holding {
	var hs []holding
	if f.tree.Len() > 0 {
		f.tree.Holds(txn, func(r txnlock.Range, m txnlock.Mode) bool {
			hs = append(hs, holding{txn, r, m})
			return true
		})
	}
	f.pointsOfLocked(txn, func(l *locktable.Lock, m txnlock.Mode) bool {
		hs = append(hs, holding{txn, txnlock.Point(l.KeyBytes()), m})
		return true
	})
	return hs
}

// conflictsWithAny reports whether waiter w conflicts with one of hs, the
// holdings of another transaction.
func (w *waiter) conflictsWithAny(hs []holding) bool {
	for _, h := range hs {
		if !h.mode.Compatible(w.mode) && h.r.Overlaps(w.r) {
			return true
		}
	}
	return false
}

// acquireWideLocked stores wide range r in the family's tree, and notes
// in txn's record that it holds wide locks in f (afresh if an UnlockAll
// took the record meanwhile), so that UnlockAll finds them. A request
// that never gets its wide lock leaves no record. Every stripe is held.
func (f *family) acquireWideLocked(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) {
	f.m.sh.Txns.NoteWide(txn, f.idx)
	f.wideSeen = true
	f.tree.Acquire(txn, r, mode)
	f.syncTreeMemLocked()
	f.wideChangedLocked(r, txn)
}

// recheckWideLocked re-checks, in queue order, the wide waiters that
// overlap one of rs. Every stripe is held.
func (f *family) recheckWideLocked(rs []txnlock.Range) {
	if f.wide.Len() == 0 {
		return
	}
	var ws []*waiter
	for _, r := range rs {
		f.wideOverlapping(r, newRequest, func(w *waiter) bool {
			ws = append(ws, w)
			return true
		})
	}
	slices.SortFunc(ws, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range slices.Compact(ws) {
		f.recheckWideWaiterLocked(w) // a grant removes w from the index: ws is a copy
	}
}

// recheckWideWaiterLocked re-evaluates wide waiter w after something it
// overlaps was released or left the queue, and grants w if nothing blocks
// it any more. Every stripe is held.
func (f *family) recheckWideWaiterLocked(w *waiter) {
	if !w.lw.Active() {
		return // failed: its goroutine unlinks it and re-checks
	}
	if !f.wideBlockedLocked(&w.request, w.seq) {
		f.grantWideLocked(w)
	}
}

// grantWideLocked grants wide waiter w, which is still waiting: it
// acquires w's range, unlinks w and ends its wait (unless w failed just
// now). Every stripe is held.
func (f *family) grantWideLocked(w *waiter) {
	lw := w.lw
	if !lw.Claim() {
		return // failed meanwhile: its goroutine unlinks it
	}
	// The waiter sleeps until Wake: record the grant first
	// (acquireWideLocked).
	f.wide.Remove(lw, w.seq)
	f.acquireWideLocked(w.txn, w.r, w.mode)
	f.wideCounters.Acquired++
	f.wideCounters.EndWait(nil, lw.Since, f.m.clock.Now())
	// Touch lw no more after Wake: its goroutine may recycle it at once
	// (lockwait.Waiter.Release). w itself is not recycled.
	lw.Wake()
}
