package rangelock

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// lockReqLocks takes the stripe mutex of a point request, or every stripe
// mutex for a wide one.
func (f *family) lockReqLocks(q *request) {
	if q.point() {
		f.stripes[q.stripe].mu.Lock()
		return
	}
	f.lockStripes()
}

// unlockReqLocks releases what lockReqLocks took.
func (f *family) unlockReqLocks(q *request) {
	if q.point() {
		f.stripes[q.stripe].mu.Unlock()
		return
	}
	f.unlockStripes()
}

// countersLocked returns the counters of q's stripe, or the family's wide
// counters.
func (f *family) countersLocked(q *request) *lockwait.Counters {
	if q.point() {
		return &f.stripes[q.stripe].counters
	}
	return &f.wideCounters
}

// coveredLocked reports whether q.txn already holds all of q.r in mode or
// stronger: a point as a point lock or inside a wide lock; a wide range
// inside its wide locks (points held one by one do not count).
func (f *family) coveredLocked(q *request, mode txnlock.Mode) bool {
	if q.point() {
		s := &f.stripes[q.stripe]
		if l := s.lockOfLocked(q.h, q.key); l != nil && l.ModeOf(q.txn).Covers(mode) {
			return true
		}
		return s.tree.Len() > 0 && s.tree.Covered(q.txn, q.r, mode)
	}
	return f.stripes[0].tree.Covered(q.txn, q.r, mode)
}

// lockPointFast grants, under the stripe mutex alone, the two point
// requests that need nothing but the stripe's table: a re-lock of a key
// txn holds in mode or stronger, and a key nobody holds or waits for (not
// in the table) with no wide lock or wide waiter in the family. It reports done=false, having
// changed nothing, for every other request: family.lock runs those.
// Separate from lock so that the common case builds no request.
func (f *family) lockPointFast(txn txnlock.TxnID, key []byte, h uint64, si int, mode txnlock.Mode) (done bool, err error) {
	s := &f.stripes[si]
	s.mu.Lock()
	done, err = s.lockPointFastLocked(txn, key, h, mode)
	s.mu.Unlock()
	return done, err
}

// lockPointFastLocked is lockPointFast with s's mutex held.
func (s *stripe) lockPointFastLocked(txn txnlock.TxnID, key []byte, h uint64, mode txnlock.Mode) (done bool, err error) {
	f := s.f
	if f.dead != nil {
		return true, f.dead
	}
	l, pos := s.points.Find(h, key)
	switch {
	case l != nil:
		if !l.ModeOf(txn).Covers(mode) {
			return false, nil // held by another, an upgrade, or queued for
		}
	case f.wide.Len() > 0 || s.tree.Len() > 0:
		return false, nil // a wide lock or waiter may overlap key
	case !f.m.mem.fitsPointLocked(s, len(key)):
		return false, nil // escalation, or ErrLockLimit
	default:
		holds := s.txnPointsLocked(txn)
		s.grantPointLocked(s.newLockLocked(pos, h, key), holds, mode, nil)
		s.syncMemLocked(&f.m.mem)
	}
	s.counters.Acquired++ // a grant, or a re-lock (a no-op)
	return true, nil
}

// lock runs request q: grant at once, fail, or queue and wait. On error it
// returns the blockers at the end, for the error report.
func (f *family) lock(ctx context.Context, q *request, timeout time.Duration) ([]txnlock.TxnID, error) {
	m := f.m
	if !q.point() {
		m.txns.noteWide(q.txn, f)
	}
	for escalated := false; ; escalated = true {
		f.lockReqLocks(q)
		if f.dead != nil {
			err := f.dead
			f.unlockReqLocks(q)
			return nil, err
		}
		if !q.point() {
			f.orderPointsLocked() // blockersLocked scans points by range
		}
		if q.point() {
			q.tp = f.stripes[q.stripe].txnPointsLocked(q.txn)
		}
		if f.coveredLocked(q, q.mode) {
			f.countersLocked(q).Acquired++ // a re-lock is a no-op
			f.unlockReqLocks(q)
			return nil, nil
		}
		if m.mem.fitsLocked(f, q) {
			break
		}
		if escalated {
			f.countersLocked(q).Limits++
			f.unlockReqLocks(q)
			return nil, txnlock.ErrLockLimit
		}
		f.unlockReqLocks(q)
		f.escalate()
	}

	var l *locktable.Lock // the Lock of a point request's key, if it has one
	var blocked bool
	if q.point() {
		l = f.stripes[q.stripe].lockOfLocked(q.h, q.key)
		blocked = f.pointBlockedLocked(q, l)
	} else {
		blocked = f.blockedLocked(q)
		if blocked && q.mode == txnlock.Exclusive && f.coveredLocked(q, txnlock.Shared) {
			q.upgrade = true
			blocked = f.blockedLocked(q)
		}
	}
	if !blocked {
		f.acquireLocked(q, l)
		if !q.upgrade || f.m.det == nil {
			f.unlockReqLocks(q)
			return nil, nil
		}
		// Shared requests waiting on what was upgraded now wait for
		// q.txn too: tell the detector.
		if !q.point() {
			f.refreshAfterUpgradeLocked(q)
			f.unlockStripes()
			return nil, nil
		}
		rs := []txnlock.Range{q.r}
		wide := f.wideOverlapsLocked(rs)
		f.unlockReqLocks(q)
		f.recheckWide(wide, rs)
		return nil, nil
	}
	if timeout == txnlock.NoWait {
		f.countersLocked(q).Timeouts++
		report := f.waitsForLocked(q, newRequest, l, nil, nil)
		f.unlockReqLocks(q)
		return report, txnlock.ErrLockTimeout
	}
	w := f.enqueueLocked(q, l)
	f.unlockReqLocks(q)
	if m.queued != nil {
		m.queued(q.txn)
	}
	err := w.lw.Wait(ctx, timeout, m.clock, m.det)
	if err == nil {
		// The granter unlinked w.lw before it signalled and touches it
		// no more.
		w.lw.Release()
		return nil, nil
	}
	report := f.abandon(w, err) // a new variable: buf stays on the stack
	w.lw.Release()              // unlinked by abandon
	return report, err
}

// acquireLocked grants q at once; l is the Lock of a point request's key,
// or nil if it has none yet.
func (f *family) acquireLocked(q *request, l *locktable.Lock) {
	if q.point() {
		s := &f.stripes[q.stripe]
		if l == nil {
			l = s.lockForLocked(q.h, q.key)
		}
		s.grantPointLocked(l, q.tp, q.mode, nil)
		s.counters.Acquired++
		s.syncMemLocked(&f.m.mem)
		// A new holder, or a stronger mode, of a key with waiters.
		f.refreshQueueLocked(s, l)
		return
	}
	f.acquireWideLocked(q.txn, q.r, q.mode)
	f.wideCounters.Acquired++
}

// enqueueLocked queues q and tells the detector what it waits for: a wide
// request behind every wide waiter, a point request in its key's queue (l,
// or a new Lock if nil; locktable.Lock.Enqueue puts an upgrade at the
// front).
func (f *family) enqueueLocked(q *request, l *locktable.Lock) *waiter {
	now := f.m.clock.Now()
	w := &waiter{request: *q}
	w.r = q.r.Clone() // the caller may reuse its buffers once Lock returns
	ref := txnlock.LockRef{CF: f.id, Range: w.r, Mode: q.mode}
	w.lw = lockwait.New(q.txn, ref, now)
	w.lw.Upgrade = q.upgrade
	w.lw.Ext = w
	w.seq = f.seq.Add(1)
	held := 0
	if w.point() {
		w.key, _ = w.r.PointKey()
		s := &f.stripes[w.stripe]
		if l == nil {
			l = s.lockForLocked(w.h, w.key)
		}
		w.lock = l
		w.shared = !f.wideWaiterOverlapsLocked(w.r)
		if !w.shared {
			l.Det().Own++
		}
		l.Enqueue(w.lw)
		s.counters.BeginWait()
		held = q.tp.Len() + s.tree.TxnCount(q.txn)
	} else {
		w.key = nil
		f.wide.PushBack(w.lw)
		f.wideIdx.insert(w)
		f.wideCounters.BeginWait()
		held = f.stripes[0].tree.TxnCount(q.txn)
		for _, sp := range f.m.txns.pointsIn(q.txn, f) {
			held += sp.list.Len()
		}
	}
	if det := f.m.det; det != nil {
		if w.shared {
			w.lw.Resource = f.sharedResourceLocked(&f.stripes[w.stripe], w.lock)
		} else {
			// Its own resource, with every conflict as its blockers
			// (computed after w was linked: w is not ahead of itself).
			w.blockers = f.blockersLocked(&w.request, w.seq, nil)
			w.lw.Resource = det.NewResource()
			det.SetBlockers(w.lw.Resource, w.blockers)
		}
		w.lw.LocksHeld = held // Wait reports the wait (Block)
		w.lw.Stamp = det.Stamp()
	}
	return w
}

// abandon unlinks waiter w after its wait failed with err, tells the
// detector, and re-checks the waiters that were queued behind it. It
// returns what blocked w at the end.
func (f *family) abandon(w *waiter, err error) []txnlock.TxnID {
	var blockers []txnlock.TxnID
	finish := func(c *lockwait.Counters) {
		if err == txnlock.ErrLockTimeout {
			// Only a timeout reports whom it waited for.
			blockers = f.waitsForLocked(&w.request, w.seq, w.lock, w.lw, nil)
		}
		c.EndWait(err, w.lw.Since, f.m.clock.Now())
		if det := f.m.det; det != nil && !w.shared {
			det.DropResource(w.lw.Resource) // Wait has unblocked w
		}
	}
	rs := []txnlock.Range{w.r}
	if w.point() {
		s := &f.stripes[w.stripe]
		s.mu.Lock()
		finish(&s.counters)
		l := w.lock
		l.Leave(w.lw)
		f.leftQueueLocked(l, w)
		if l.Queued() > 0 {
			f.recheckQueueLocked(s, l)
		}
		if l.Empty() {
			s.dropLocked(w.h, l)
		}
		// Every overlapping wide waiter, not only those behind w: an
		// upgrade granted just now may block them.
		wide := f.wideOverlapsLocked(rs)
		s.mu.Unlock()
		f.recheckWide(wide, rs)
		return blockers
	}
	f.lockStripes()
	defer f.unlockStripes()
	finish(&f.wideCounters)
	f.wide.Remove(w.lw)
	f.wideIdx.remove(w)
	for i := range f.stripes {
		f.recheckStripeLocked(&f.stripes[i], rs)
	}
	f.recheckWideLocked(rs)
	return blockers
}

// recheckStripeLocked re-checks the point waiters of s on keys in rs
// (ranges just released in s, or the range of a waiter that left). s is
// held.
func (f *family) recheckStripeLocked(s *stripe, rs []txnlock.Range) {
	if s.points.Len() == 0 {
		return
	}
	var ls []*locktable.Lock
	for _, r := range rs {
		if k, ok := r.PointKey(); ok {
			// One key, in one stripe: a probe, not a scan.
			if h, si := f.m.hashKey(k); si == int(s.idx) {
				if l := s.lockOfLocked(h, k); l != nil && l.Queued() > 0 {
					ls = append(ls, l)
				}
			}
			continue
		}
		s.queuedLocked(r, func(l *locktable.Lock) bool {
			ls = append(ls, l)
			return true
		})
	}
	if len(rs) > 1 {
		// The ranges may overlap: each key once.
		slices.SortFunc(ls, func(a, b *locktable.Lock) int { return strings.Compare(a.Key(), b.Key()) })
		ls = slices.Compact(ls)
	}
	for _, l := range ls {
		f.recheckQueueLocked(s, l) // l keeps a holder or a waiter: it stays
	}
}

// wideOverlapsLocked reports whether a waiting wide request overlaps one
// of rs. Any stripe is held.
func (f *family) wideOverlapsLocked(rs []txnlock.Range) bool {
	found := false
	for _, r := range rs {
		f.wideIdx.overlapping(r, func(w *waiter) bool {
			found = w.lw.Active()
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// recheckWideLocked re-checks, in queue order, the wide waiters that
// overlap one of rs. Every stripe is held.
func (f *family) recheckWideLocked(rs []txnlock.Range) {
	if f.wide.Len() == 0 {
		return
	}
	var ws []*waiter
	for _, r := range rs {
		f.wideIdx.overlapping(r, func(w *waiter) bool {
			ws = append(ws, w)
			return true
		})
	}
	slices.SortFunc(ws, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range slices.Compact(ws) {
		f.recheckLocked(w) // a grant removes w from the index: ws is a copy
	}
}
