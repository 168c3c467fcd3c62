package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// The deadlock detector asks; rangelock tells it nothing. A queued waiter
// carries its family's detectorSource (lockwait.Waiter.Src), and the
// detector, from any goroutine and with no latch of the manager held, asks
// it whom the wait is blocked by (Blockers) and whom it waits for directly
// (WaitsFor). Each answer comes from the live lock table, under the
// latch(es) that guard the waiter's queue: its stripe's for a point
// waiter, every latch of the family for a wide one (one latch: a family
// with a wide waiter is fused). A grant, a release or an escalation costs
// the detector nothing.
//
// Blockers is contracted: a shared point waiter (no overlapping wide
// waiter was queued ahead of it) is blocked by its key's holders, point
// and wide (keyHoldersLocked); its queue is not walked (points.go says why
// that is exact). A point waiter queued behind an overlapping wide waiter,
// and a wide waiter, are answered with their nearest blockers
// (nearestBlockersLocked), by which every request they wait for is
// reached; each keeps its answer until something that may change it
// happens (blkcache.go), since searches ask the same waiters again and
// again. WaitsFor, by which the detector confirms a
// cycle, is the key's Lock as it will stand once the waits that ended have
// left it (locktable.Lock.SettledWaitsFor) for a shared point waiter in a
// stripe without range locks, and its own conflicts (blockersLocked) for
// the others: a range may wait for a conflicting holder through requests
// that wait for other keys too, which the nearest-requests rule leaves to
// be reached transitively, through waits the detector may not see yet.

// detectorSource answers the detector's questions about the waiters of
// one family (lockwait.Source).
type detectorSource struct{ f *family }

var _ lockwait.Source = (*detectorSource)(nil)

// Blockers appends to dst the transactions that block lw's lock, and
// reports false if lw no longer waits (granted, failed, or its family
// closed or dropped).
func (d *detectorSource) Blockers(lw *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	f, w := d.f, waiterOf(lw)
	held, ok := f.lockWaiting(w)
	if !ok {
		return dst, false
	}
	dst = f.detBlockersLocked(w, dst)
	f.unlockReqLocks(held)
	return dst, true
}

// WaitsFor appends to dst whom lw waits for directly, and reports false
// if lw no longer waits.
func (d *detectorSource) WaitsFor(lw *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	f, w := d.f, waiterOf(lw)
	held, ok := f.lockWaiting(w)
	if !ok {
		return dst, false
	}
	if w.shared && f.tree.Len() == 0 {
		// Only point requests on the key: the lock as it will stand.
		dst = w.lock.SettledWaitsFor(dst, lw)
	} else {
		dst = f.blockersLocked(&w.request, w.seq, dst)
	}
	f.unlockReqLocks(held)
	return dst, true
}

// lockCounter is the manager as its detector sees it: it tells how many
// locks a transaction holds, for reports and the fewest-locks policy.
type lockCounter struct{ m *Manager }

var _ detect.LockCounter = lockCounter{}

// LocksHeld is how many ranges txn holds in the manager: its points, and
// its wide locks in each family where it may hold some, counted under
// that family's latches.
func (c lockCounter) LocksHeld(txn txnlock.TxnID) int {
	n := c.m.sh.Txns.Count(txn)
	for _, f := range c.m.sh.Fams.All {
		if c.m.sh.Txns.Wide(txn, f.idx) {
			f.lockStripes()
			n += f.tree.TxnCount(txn)
			f.unlockStripes()
		}
	}
	return n
}

// holdsAnyLocked reports whether txn holds a lock in f: a request of it
// may then skip requests ahead of it (waitsfor.Queued's MaySkip). Every
// stripe is held.
func (f *family) holdsAnyLocked(txn txnlock.TxnID) bool {
	held := f.tree.TxnCount(txn) > 0
	f.pointsOfLocked(txn, func(*locktable.Lock, txnlock.Mode) bool {
		held = true
		return false
	})
	return held
}

// lockWaiting takes the lock(s) that guard waiter w's queue and reports
// whether w still waits there, with what unlockReqLocks needs; if not, it
// releases them again. Under those locks an active waiter is linked: only
// a holder of them grants it, and a failed waiter stays linked until its
// goroutine takes them to leave. A closed or dropped family has failed
// its waiters.
func (f *family) lockWaiting(w *waiter) (*latch.Mutex, bool) {
	held := f.lockReqLocks(&w.request)
	if f.dead != nil || !w.lw.Active() {
		f.unlockReqLocks(held)
		return nil, false
	}
	return held, true
}

// detBlockersLocked appends to dst what the detector's Blockers answers
// for waiter w, which is linked: its key's holders if w is shared (w's
// own transaction among them if it upgrades), else its nearest blockers
// (nearestBlockersLocked). w's lock(s) are held.
func (f *family) detBlockersLocked(w *waiter, dst []txnlock.TxnID) []txnlock.TxnID {
	if w.shared {
		return f.stripes[w.stripe].keyHoldersLocked(w.lock, dst)
	}
	return f.keptBlockersLocked(w, dst)
}

// nearestBlockersLocked appends to dst, sorted and once each, the
// blockers of q (at queue position seq) by the rule of Status
// (txnlock.WaitStatus.Blockers): the nearest conflicting requests queued
// ahead on each part of q's range (waitsfor.Spread; none for an
// upgrade), and the conflicting holders that none of those requests
// conflicts with itself (all of them if no request is listed). A request
// ahead whose transaction holds a lock (or an upgrade) may skip requests
// ahead of it, so it is not taken to reach them (waitsfor.Queued's
// MaySkip). Every request q waits for is then reached through the lists,
// transitively, so a search finds every cycle, and the graph keeps a few
// edges per waiter where q's own conflicts (blockersLocked) can be every
// waiter queued ahead of it. Each listed edge is among blockersLocked, by which
// the detector confirms a cycle. q's lock(s) are held.
func (f *family) nearestBlockersLocked(q *request, seq uint64, dst []txnlock.TxnID) []txnlock.TxnID {
	dst, _ = f.nearestBlockersAheadLocked(q, seq, dst)
	return dst
}

// nearestBlockersAheadLocked is nearestBlockersLocked, and returns the
// waiters queued ahead that the answer was made of.
func (f *family) nearestBlockersAheadLocked(q *request, seq uint64, dst []txnlock.TxnID) ([]txnlock.TxnID, []*waiter) {
	base := len(dst)
	var ahead []*waiter
	if !q.upgrade {
		ahead = f.queuedAheadLocked(q, seq)
	}
	if len(ahead) > 0 {
		queued := make([]waitsfor.Queued, len(ahead))
		for i, w := range ahead {
			queued[i] = waitsfor.Queued{Txn: w.txn, Mode: w.mode, Range: w.r, MaySkip: w.upgrade || w.holder || f.holdsAnyLocked(w.txn)}
		}
		dst = waitsfor.Spread(dst, queued, q.txn, q.mode)
	}
	listed := len(dst)
	// reached reports whether a listed request waits for holder owner of
	// held in heldMode itself.
	reached := func(owner txnlock.TxnID, held txnlock.Range, heldMode txnlock.Mode) bool {
		for _, w := range ahead {
			if w.txn != owner && !heldMode.Compatible(w.mode) && held.Overlaps(w.r) &&
				slices.Contains(dst[base:listed], w.txn) {
				return true
			}
		}
		return false
	}
	f.heldConflictsLocked(q, func(owner txnlock.TxnID, held txnlock.Range, heldMode txnlock.Mode) bool {
		if listed == base || !reached(owner, held, heldMode) {
			dst = append(dst, owner)
		}
		return true
	})
	return sortUnique(dst, base), ahead
}
