package rangelock

import (
	"context"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/shell"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// A request's way in: Lock validates it, grants an uncontended point at
// once (lockPointFast), and otherwise runs it through family.lock, which
// grants it, fails it (NoWait) or queues it (enqueueLocked) and waits; a
// wait that fails leaves the queue in abandon.

// Lock acquires req.Range in column family req.CF in req.Mode (see
// txnlock.Manager). A point range [k, k] takes the latch of its stripe;
// any other range takes every latch of the family (one, once it is fused;
// see the package doc).
func (m *Manager) Lock(ctx context.Context, req txnlock.Request) error {
	k, point := req.Range.PointKey()
	f, timeout, err := m.checkLock(ctx, &req, point)
	if err != nil {
		return shell.LockErr("lock", req, nil, err)
	}
	if !point {
		return m.lockSlow(ctx, f, &request{txn: req.Txn, r: req.Range, mode: req.Mode, stripe: wideStripe}, req, timeout)
	}
	h, si := m.hashKey(k)
	if done, err := f.lockPointFast(req.Txn, k, h, si, req.Mode); done {
		if err != nil {
			return shell.LockErr("lock", req, nil, err)
		}
		return nil
	}
	return m.lockSlow(ctx, f, &request{txn: req.Txn, r: req.Range, mode: req.Mode, key: k, h: h, stripe: si}, req, timeout)
}

// lockSlow runs q, the request req that lockPointFast did not grant, through
// family.lock.
func (m *Manager) lockSlow(ctx context.Context, f *family, q *request, req txnlock.Request, timeout time.Duration) error {
	blockers, err := f.lock(ctx, q, timeout)
	if err != nil {
		if err != txnlock.ErrLockTimeout && err != txnlock.ErrLockNoWait {
			blockers = nil // LockError.Blockers is for timeouts and NoWait refusals
		}
		return shell.LockErr("lock", req, blockers, err)
	}
	return nil
}

// checkLock validates a Lock call and returns its family and resolved
// timeout. point says req.Range is [k, k] (so it is valid).
func (m *Manager) checkLock(ctx context.Context, req *txnlock.Request, point bool) (*family, time.Duration, error) {
	var rangeErr error
	if !point && !req.Range.Valid() {
		rangeErr = txnlock.ErrInvalidRange
	}
	return m.sh.CheckLock(ctx, req, rangeErr, m.opts.LockTimeout)
}

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
	// idle and holder: a queued request's transaction held no lock, or
	// some, in the family when the request queued (enqueueLocked), so
	// that a holder's request passes an idle one (waitsfor.Skipped), now
	// and at every re-check, whatever either transaction takes or lets go
	// of meanwhile. Only a wide request is idle: a point request waits on
	// its key, where the passer's own point request could stand behind it
	// and, answered by the key's holders (detect.go), wait unseen for a
	// request that waits for its transaction. holder is false for a point
	// request queued while the family had no wide activity: no wide
	// request is ahead of it.
	idle, holder bool
}

func (q *request) point() bool { return q.stripe != wideStripe }

// waiter is a queued request. It is lockwait.Waiter.Ext of lw. Its fields
// are guarded by the latch(es) that guard its queue: its stripe's for a
// point waiter (lockStripe), every latch of the family for a wide one.
type waiter struct {
	request
	lw  *lockwait.Waiter
	seq uint64 // the order in which the family's waiters queued
	// lock is a point waiter's key's Lock, whose queue holds lw.
	lock *locktable.Lock
	// blk is the detector's last answer, kept while nothing changes it
	// (blkcache.go); guarded like the waiter's queue.
	blk blkCache
	// shared: a point waiter that had no overlapping wide waiter ahead
	// when it queued. The detector's Blockers of it are its key's holders
	// (the contraction; see detect.go). Otherwise (wide, or a wide waiter
	// ahead) they are its own conflicts, blockersLocked, and the key's
	// Lock counts it in Det().Own.
	shared bool
}

func waiterOf(lw *lockwait.Waiter) *waiter { return lw.Ext.(*waiter) }

// newRequest is the seq of a request that is not queued: every queued
// waiter is ahead of it. (seq is the order of queueing, not a queue
// position: an upgrade is queued at the front of its key's queue, ahead
// of earlier requests; see eachAhead.)
const newRequest = ^uint64(0)

// lockPointFast grants, under the stripe mutex alone, the two point
// requests that need nothing but the stripe's table: a re-lock of a key
// txn holds in mode or stronger, and a key nobody holds or waits for (not
// in the table) with no wide lock or wide waiter in the family. It
// reports done=false, having changed nothing, for every other request:
// family.lock runs those. Separate from lock so that the common case
// builds no request.
func (f *family) lockPointFast(txn txnlock.TxnID, key []byte, h uint64, si int, mode txnlock.Mode) (done bool, err error) {
	s := &f.stripes[si]
	mu := f.lockStripe(si)
	done, err = s.lockPointFastLocked(txn, key, h, mode)
	mu.Unlock()
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
	case f.fused.Load():
		return false, nil // a wide lock or waiter may overlap key
	case !f.m.mem.fitsPointLocked(s, len(key)):
		return false, nil // escalation, or ErrLockLimit
	default:
		s.grantPointLocked(s.newLockLocked(pos, h, key), txn, mode, nil)
		s.syncMemLocked(&f.m.mem)
	}
	s.counters.Acquired++ // a grant, or a re-lock (a no-op)
	return true, nil
}

// lock runs request q: grant at once, fail, or queue and wait. On error it
// returns the blockers at the end, for the error report.
func (f *family) lock(ctx context.Context, q *request, timeout time.Duration) ([]txnlock.TxnID, error) {
	m := f.m
	var held *latch.Mutex // what lockReqLocks took
	for escalated := false; ; escalated = true {
		held = f.lockReqLocks(q)
		if f.dead != nil {
			err := f.dead
			f.unlockReqLocks(held)
			return nil, err
		}
		if !q.point() {
			f.orderPointsLocked() // blockersLocked scans points by range
		}
		if f.coveredLocked(q, q.mode) {
			f.countersLocked(q).Acquired++ // a re-lock is a no-op
			f.unlockReqLocks(held)
			return nil, nil
		}
		if m.mem.fitsLocked(f, q) {
			break
		}
		if escalated {
			f.countersLocked(q).Limits++
			f.unlockReqLocks(held)
			return nil, txnlock.ErrLockLimit
		}
		f.unlockReqLocks(held)
		f.escalate()
	}

	var l *locktable.Lock // the Lock of a point request's key, if it has one
	var blocked bool
	if q.point() {
		l = f.stripes[q.stripe].lockOfLocked(q.h, q.key)
		blocked = f.pointBlockedLocked(q, l)
	} else {
		blocked = f.wideBlockedLocked(q, newRequest)
		if blocked && q.mode == txnlock.Exclusive && f.coveredLocked(q, txnlock.Shared) {
			q.upgrade = true
			blocked = f.wideBlockedLocked(q, newRequest)
		}
	}
	if !blocked {
		// A request granted past queued requests that conflict with it
		// (an upgrade, or one that skips them) makes them wait for its
		// transaction, which may wait elsewhere (detect.Graph.Passed).
		passed := m.sh.Det != nil && (!q.point() || f.wide.Len() > 0 || (l != nil && l.Queued() > 0)) &&
			f.conflictAheadLocked(q, newRequest)
		f.acquireLocked(q, l)
		f.unlockReqLocks(held)
		if passed {
			m.sh.Det.Passed(q.txn)
		}
		return nil, nil
	}
	if timeout == txnlock.NoWait {
		f.countersLocked(q).Timeouts++
		report := f.waitsForLocked(q, newRequest, l, nil, nil)
		f.unlockReqLocks(held)
		return report, txnlock.ErrLockNoWait
	}
	w := f.enqueueLocked(q, l)
	f.unlockReqLocks(held)
	if m.queued != nil {
		m.queued(q.txn)
	}
	err := w.lw.Wait(ctx, timeout, m.clock, m.sh.Det)
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

// lockReqLocks takes the latch of a point request's stripe (lockStripe)
// and returns it, or every latch of the family for a wide request
// (lockStripes) and returns nil.
func (f *family) lockReqLocks(q *request) *latch.Mutex {
	if q.point() {
		return f.lockStripe(q.stripe)
	}
	f.lockStripes()
	return nil
}

// unlockReqLocks releases what lockReqLocks took and returned.
func (f *family) unlockReqLocks(held *latch.Mutex) {
	if held != nil {
		held.Unlock()
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
		return f.tree.Len() > 0 && f.tree.Covered(q.txn, q.r, mode)
	}
	return f.tree.Covered(q.txn, q.r, mode)
}

// acquireLocked grants q at once; l is the Lock of a point request's key,
// or nil if it has none yet.
func (f *family) acquireLocked(q *request, l *locktable.Lock) {
	if q.point() {
		s := &f.stripes[q.stripe]
		if l == nil {
			l = s.lockForLocked(q.h, q.key)
		}
		s.grantPointLocked(l, q.txn, q.mode, nil)
		s.counters.Acquired++
		s.syncMemLocked(&f.m.mem)
		return
	}
	f.acquireWideLocked(q.txn, q.r, q.mode)
	f.wideCounters.Acquired++
}

// enqueueLocked queues q: a wide request behind every wide waiter, a point
// request in its key's queue (l, or a new Lock if nil;
// locktable.Lock.Enqueue puts an upgrade at the front). With a detector it
// gives the waiter what the wait's report needs: its family's
// lockwait.Source, the Source's answer to Blockers now, a stamp and the
// count of locks its transaction holds.
func (f *family) enqueueLocked(q *request, l *locktable.Lock) *waiter {
	now := f.m.clock.Now()
	w := &waiter{request: *q}
	w.r = q.r.Clone() // the caller may reuse its buffers once Lock returns
	ref := txnlock.LockRef{CF: f.id, Range: w.r, Mode: q.mode}
	w.lw = lockwait.New(q.txn, ref, now)
	w.lw.Upgrade = q.upgrade
	w.lw.Ext = w
	w.seq = f.seq.Add(1)
	if !w.point() || f.fused.Load() { // every latch is held
		w.holder = f.holdsAnyLocked(w.txn)
		w.idle = !w.holder && !w.point()
	}
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
		if w.upgrade {
			l.Det().Version++ // ahead of the key's waiters (blkcache.go)
		}
		s.counters.BeginWait()
	} else {
		w.key = nil
		f.wide.PushBack(w.lw, w.seq)
		f.wideCounters.BeginWait()
	}
	if det := f.m.sh.Det; det != nil {
		lw := w.lw
		lw.Src = &f.src
		lw.Stamp = det.Stamp()
		// Only a holder's request is ordered ahead of requests queued
		// before it (an upgrade, a widening, a pass of idle requests);
		// striped, a point request's holder is unset, and there it
		// goes ahead of its key's queue only as an upgrade.
		lw.MaySkip = w.upgrade || w.holder
	}
	return w
}

// waitsForLocked appends to dst whom q, at queue position seq, waits for,
// sorted and once each: the rule of txnlock.WaitStatus.Blockers, which
// Status shows and a timeout's error reports. A point request with no
// overlapping wide request queued ahead of it waits behind its key's
// queue alone: its nearest conflicting requests there, else the key's
// conflicting holders, point and wide. For a point request l is its key's
// Lock (nil: none) and self its waiter in l's queue (nil: q is not
// queued); the walk goes back from it to the nearest Exclusive request
// and no further, so a timeout on a hot key does not walk its queue. Any
// other request is answered with its nearest blockers over every queue
// it overlaps (nearestBlockersLocked).
func (f *family) waitsForLocked(q *request, seq uint64, l *locktable.Lock, self *lockwait.Waiter, dst []txnlock.TxnID) []txnlock.TxnID {
	if !q.point() || (!q.upgrade && f.wideWaiterAheadLocked(q.r, seq)) {
		return f.nearestBlockersLocked(q, seq, dst)
	}
	if l != nil && f.tree.Len() == 0 {
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

// abandon unlinks waiter w after its wait failed with err (Wait has
// removed it from the detector) and re-checks the waiters that were
// queued behind it. It returns what blocked w at the end.
func (f *family) abandon(w *waiter, err error) []txnlock.TxnID {
	var blockers []txnlock.TxnID
	finish := func(c *lockwait.Counters) {
		if err == txnlock.ErrLockTimeout {
			// Only a timeout reports whom it waited for.
			blockers = f.waitsForLocked(&w.request, w.seq, w.lock, w.lw, nil)
		}
		c.EndWait(err, w.lw.Since, f.m.clock.Now())
	}
	rs := []txnlock.Range{w.r}
	if w.point() {
		s := &f.stripes[w.stripe]
		mu := f.lockStripe(w.stripe)
		finish(&s.counters)
		l := w.lock
		l.Leave(w.lw)
		again := f.pointLeftLocked(l, w)
		f.leftQueueLocked(l, w)
		if l.Queued() > 0 {
			f.recheckQueueLocked(s, l)
		}
		if l.Empty() {
			s.dropLocked(w.h, l)
		}
		if f.wide.Len() == 0 {
			mu.Unlock()
		} else {
			// The overlapping wide waiters, which may have waited for
			// w: the family is fused, so mu is its one latch.
			f.recheckWideLocked(rs)
			f.unlockStripes()
		}
		f.recheckAll(again)
		return blockers
	}
	f.lockStripes()
	finish(&f.wideCounters)
	f.wide.Remove(w.lw, w.seq)
	again := f.wideLeftLocked(w)
	f.recheckPointsLocked(rs)
	f.recheckWideLocked(rs)
	f.unlockStripes()
	f.recheckAll(again)
	return blockers
}
