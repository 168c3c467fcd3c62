package rangelock

import (
	"cmp"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
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
	// tp is the transaction's Holds in the stripe of a point request.
	tp *locktable.Holds
}

func (q *request) point() bool { return q.stripe != wideStripe }

// waiter is a queued request. It is lockwait.Waiter.Ext of lw. Its fields
// are guarded by the lock(s) that guard its queue: its stripe's mutex for a
// point waiter, every stripe mutex for a wide one.
type waiter struct {
	request
	lw  *lockwait.Waiter
	seq uint64 // the order in which the family's waiters queued
	// lock is a point waiter's key's Lock, whose queue holds lw.
	lock *locktable.Lock
	// shared: a point waiter that had no overlapping wide waiter ahead
	// when it queued; it waits on its key's shared detector resource
	// (lock.Det().Res). Otherwise (wide, or a wide waiter ahead)
	// lw.Resource is its own and blockers is what the detector was last
	// told about it.
	shared   bool
	blockers []txnlock.TxnID
}

func waiterOf(lw *lockwait.Waiter) *waiter { return lw.Ext.(*waiter) }

// newRequest is the seq of a request that is not queued: every queued
// waiter is ahead of it. (seq is the order of queueing, not a queue
// position: an upgrade is queued at the front of its key's queue, ahead
// of earlier requests; see eachAhead.)
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
	addHeld := func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
		dst = append(dst, owner)
		return true
	}
	add := func(l *locktable.Lock) bool {
		l.Holders(func(hd *locktable.Holder) bool {
			if hd.Txn() != q.txn && !q.mode.Compatible(hd.Mode()) {
				dst = append(dst, hd.Txn())
			}
			return true
		})
		return true
	}
	if q.point() {
		s := &f.stripes[q.stripe]
		if l := s.lockOfLocked(q.h, q.key); l != nil {
			add(l)
		}
		if s.tree.Len() > 0 {
			s.tree.Conflicts(q.txn, q.r, q.mode, addHeld)
		}
	} else {
		// Every stripe has a copy of the wide locks; the points are
		// spread over the stripes.
		f.stripes[0].tree.Conflicts(q.txn, q.r, q.mode, addHeld)
		for i := range f.stripes {
			f.stripes[i].ascendPointsLocked(q.r, add)
		}
	}
	return sortUnique(dst, base)
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
		f.stripes[i].queuedLocked(q.r, func(l *locktable.Lock) bool {
			more = eachAhead(l, q, seq, fn)
			return more
		})
		if !more {
			return
		}
	}
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
	slices.SortFunc(ws, queueOrder)
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
		sp.list.All(func(hd *locktable.Holder) bool {
			found = w.r.Contains(hd.Lock().KeyBytes()) && !hd.Mode().Compatible(w.mode)
			return !found
		})
		if found {
			return true
		}
	}
	return found
}

// pointBlockedLocked reports whether point request q (not yet queued)
// must wait, by its key's Lock l (nil: the key has none) and what l does
// not know: a conflicting wide lock, and, unless q.txn holds the key, a
// conflicting wide request queued earlier. It sets q.upgrade if q.txn
// holds the key Shared, as a point or inside a wide lock, and asks for
// Exclusive: an upgrade waits for the other holders only, never for the
// queue.
func (f *family) pointBlockedLocked(q *request, l *locktable.Lock) bool {
	s := &f.stripes[q.stripe]
	wideHeld := s.tree.Len() > 0 && s.tree.HasConflict(q.txn, q.r, q.mode)
	var held txnlock.Mode
	if l != nil {
		held = l.ModeOf(q.txn)
	}
	if held == 0 && q.mode == txnlock.Exclusive && s.tree.Len() > 0 && s.tree.Covered(q.txn, q.r, txnlock.Shared) {
		// Held Shared inside a wide lock, which l does not know of.
		q.upgrade = true
		return wideHeld || (l != nil && l.Conflicts(q.txn, q.mode))
	}
	q.upgrade = held != 0 // not covered (coveredLocked): Shared, asking Exclusive
	blocked := wideHeld || (held == 0 && f.wideConflictAheadLocked(q, newRequest))
	if l == nil {
		return blocked
	}
	d, _ := l.Decide(q.txn, q.mode, blocked)
	return d == locktable.Wait
}

// wideConflictAheadLocked reports whether an active wide request of
// another transaction that overlaps q and conflicts with it was queued
// before seq.
func (f *family) wideConflictAheadLocked(q *request, seq uint64) bool {
	if f.wide.Len() == 0 {
		return false
	}
	found := false
	f.wideIdx.overlapping(q.r, func(w *waiter) bool {
		found = w.seq < seq && w.txn != q.txn && w.lw.Active() && !q.mode.Compatible(w.mode)
		return !found
	})
	return found
}

// blockedLocked reports whether wide request q (not yet queued) must wait:
// a conflicting holder, or, unless q is an upgrade, a conflicting request
// queued ahead (FIFO) that it does not skip (queuedAheadLocked).
func (f *family) blockedLocked(q *request) bool {
	if len(f.holderConflictsLocked(q, nil)) > 0 {
		return true
	}
	if q.upgrade || !f.conflictAheadLocked(q, newRequest) {
		return false
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
// For a point request l is its key's Lock (nil: none) and self its waiter
// in l's queue (nil: q is not queued): with no wide waiter in the family
// the walk goes back from it to the nearest Exclusive request and no
// further, so a timeout on a hot key does not walk its queue.
func (f *family) waitsForLocked(q *request, seq uint64, l *locktable.Lock, self *lockwait.Waiter, dst []txnlock.TxnID) []txnlock.TxnID {
	if q.point() && f.wide.Len() == 0 {
		if l != nil && f.stripes[q.stripe].tree.Len() == 0 {
			// The key's Lock knows every holder and every request.
			if self != nil {
				return l.WaitsFor(dst, self)
			}
			return l.WaitsForNew(dst, q.txn, q.mode, q.upgrade)
		}
		if !q.upgrade && l != nil {
			last := l.Back()
			if self != nil {
				last = self.Prev()
			}
			n := len(dst)
			if dst = waitsfor.Nearest(dst, locktable.Backward(last), q.txn, q.mode); len(dst) > n {
				return dst
			}
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

// recheckLocked re-evaluates wide waiter w after something it overlaps
// was released or left the queue: it grants w if nothing blocks it any
// more, else it tells the detector about a changed set of blockers. Every
// stripe is held.
func (f *family) recheckLocked(w *waiter) {
	if !w.lw.Active() {
		return // failed: its goroutine unlinks it and re-checks
	}
	var buf [8]txnlock.TxnID
	b := f.blockersLocked(&w.request, w.seq, buf[:0])
	if len(b) == 0 {
		f.grantWideLocked(w)
		return
	}
	if !slices.Equal(b, w.blockers) {
		w.blockers = slices.Clone(b)
		if det := f.m.det; det != nil {
			det.SetBlockers(w.lw.Resource, w.blockers)
		}
	}
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
		f.refreshKeyLocked(&f.stripes[w.stripe], w.lock)
		return
	}
	var buf [8]txnlock.TxnID
	if b := f.blockersLocked(&w.request, w.seq, buf[:0]); len(b) > 0 && !slices.Equal(b, w.blockers) {
		w.blockers = slices.Clone(b)
		det.SetBlockers(w.lw.Resource, w.blockers)
	}
}

// refreshAfterUpgradeLocked refreshes the blockers of the waiters that a
// wide upgrade of q just granted may block: every waiter overlapping q.r.
// (A point upgrade refreshes its key's queue as it is granted; the wide
// waiters over the key are re-checked by the caller, with every stripe
// held.) Every stripe is held.
func (f *family) refreshAfterUpgradeLocked(q *request) {
	if f.m.det == nil {
		return
	}
	for i := range f.stripes {
		s := &f.stripes[i]
		s.queuedLocked(q.r, func(l *locktable.Lock) bool {
			f.refreshQueueLocked(s, l)
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

// grantWideLocked grants wide waiter w, which is still waiting: it
// acquires w's range, unlinks w and ends its wait (unless w failed just
// now). Every stripe is held.
func (f *family) grantWideLocked(w *waiter) {
	lw := w.lw
	if !lw.Claim() {
		return // failed meanwhile: its goroutine unlinks it
	}
	// The waiter sleeps until Wake: record the grant first. The
	// transaction's record may have been taken by an UnlockAll that ran
	// while w waited: note it afresh so that the next UnlockAll finds it.
	f.m.txns.noteWide(w.txn, f)
	f.wide.Remove(lw)
	f.wideIdx.remove(w)
	if det := f.m.det; det != nil {
		// The waiter unblocks itself when it wakes (lockwait.Waiter.Wait).
		det.DropResource(lw.Resource)
	}
	f.acquireWideLocked(w.txn, w.r, w.mode)
	f.wideCounters.Acquired++
	f.wideCounters.EndWait(nil, lw.Since, f.m.clock.Now())
	upgrade := w.upgrade
	// Touch lw no more after Wake: its goroutine may recycle it at once
	// (lockwait.Waiter.Release). w itself is not recycled.
	lw.Wake()
	if upgrade {
		f.refreshAfterUpgradeLocked(&w.request)
	}
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
			s.queuedLocked(r, func(l *locktable.Lock) bool {
				f.refreshKeyLocked(s, l)
				return true
			})
		}
	}
}
