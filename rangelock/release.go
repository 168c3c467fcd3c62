package rangelock

import (
	"bytes"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
)

// A release re-checks only the waiters that overlap what it freed: the
// point waiters of a released key (its Lock's Grants: recheckQueueLocked),
// those under a released wide range (found through the ordered index:
// recheckPointsLocked), and the overlapping wide waiters (found through
// wideIndex: recheckWideLocked, with every stripe held; a path that holds
// one stripe drops it first: recheckWide). A waiter is claimed, recorded
// and woken under the same lock(s) as the release.

// Unlock releases the part of r that txn holds in cf: all of r must be
// held (in any mode), else ErrNotHeld and nothing changes. Unlocking part
// of a held range keeps the rest of it.
func (m *Manager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	k, point := r.PointKey()
	switch {
	case m.closed.Load():
		return unlockErr(txn, cf, r, txnlock.ErrClosed)
	case !txn.Valid():
		return unlockErr(txn, cf, r, txnlock.ErrInvalidTxn)
	case !point && !r.Valid():
		return unlockErr(txn, cf, r, txnlock.ErrInvalidRange)
	}
	f, err := m.family(cf)
	if err != nil {
		return unlockErr(txn, cf, r, err)
	}
	if err := f.unlock(txn, r, k, point); err != nil {
		return unlockErr(txn, cf, r, err)
	}
	return nil
}

// UnlockAll releases every lock txn holds, in every column family, at a
// cost proportional to the stripes it touched.
func (m *Manager) UnlockAll(txn txnlock.TxnID) error {
	req := txnlock.Request{Txn: txn}
	switch {
	case m.closed.Load():
		return lockErr("unlock-all", req, nil, txnlock.ErrClosed)
	case !txn.Valid():
		return lockErr("unlock-all", req, nil, txnlock.ErrInvalidTxn)
	}
	// Escalation may give txn new wide locks while we release: it records
	// them in the table, so repeat until the table has nothing for txn.
	for {
		touched := m.txns.take(txn)
		if touched == nil {
			return nil
		}
		touched.touches(func(t *famTouch) { t.f.unlockAll(txn, t) })
		m.txns.recycle(txn, touched)
	}
}

// unlockErr wraps err for an Unlock call.
func unlockErr(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range, err error) error {
	return lockErr("unlock", txnlock.Request{Txn: txn, CF: cf, Range: r}, nil, err)
}

// unlock releases r of txn (Manager.Unlock); r is [k, k] if point.
func (f *family) unlock(txn txnlock.TxnID, r txnlock.Range, k []byte, point bool) error {
	if point {
		h, si := f.m.hashKey(k)
		s := &f.stripes[si]
		mu := f.lockStripe(si)
		if f.dead != nil {
			err := f.dead
			mu.Unlock()
			return err
		}
		// Without wide locks of txn, [k, k] is only a point of its
		// stripe. (wideSeen is set with every stripe held, and the
		// table marks txn wide before it can acquire a wide lock:
		// before a wide request runs, or under escalation's locks.)
		if !f.wideSeen || !f.m.txns.hasWide(txn, f) {
			l := s.lockOfLocked(h, k)
			if l == nil || !s.releaseHoldLocked(l, txn) {
				mu.Unlock()
				return txnlock.ErrNotHeld
			}
			s.counters.Released++
			s.syncMemLocked(&f.m.mem)
			if l.Queued() > 0 {
				f.recheckQueueLocked(s, l)
			}
			if l.Empty() {
				s.dropLocked(h, l)
			}
			if f.wide.Len() == 0 {
				mu.Unlock()
				return nil
			}
			rs := []txnlock.Range{r}
			wide := f.wideOverlapsLocked(rs)
			mu.Unlock()
			f.recheckWide(wide, rs)
			return nil
		}
		mu.Unlock()
	}
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return f.dead
	}
	return f.unlockWideLocked(txn, r)
}

// unlockWideLocked releases r of txn: from its wide locks (in the
// family's tree) and its points in r (each in its own stripe). Together
// they must hold all of r, else ErrNotHeld and nothing changes. Every
// stripe is held.
func (f *family) unlockWideLocked(txn txnlock.TxnID, r txnlock.Range) error {
	var wide, union []txnlock.Range
	f.tree.Holds(txn, func(h txnlock.Range, _ txnlock.Mode) bool {
		if x, ok := intersect(h, r); ok {
			wide = append(wide, x)
		}
		return true
	})
	type heldPoint struct {
		s *stripe
		l *locktable.Lock
	}
	var points []heldPoint
	union = append(union, wide...)
	for _, sp := range f.m.txns.pointsIn(txn, f) {
		s := &f.stripes[sp.idx]
		sp.list.All(func(hd *locktable.Holder) bool {
			if l := hd.Lock(); r.Contains(l.KeyBytes()) {
				points = append(points, heldPoint{s, l})
				union = append(union, txnlock.Point(l.KeyBytes()))
			}
			return true
		})
	}
	if !coversAll(union, r) {
		return txnlock.ErrNotHeld
	}
	for _, x := range wide {
		if err := f.tree.Release(txn, x, nil); err != nil {
			panic("rangelock: internal error: releasing a held piece: " + err.Error())
		}
		f.wideChangedLocked(x, txn)
	}
	f.syncTreeMemLocked()
	for _, p := range points {
		p.s.releaseHoldLocked(p.l, txn)
		p.s.dropIfEmptyLocked(p.l) // a Lock with waiters stays, for the re-check below
	}
	for i := range f.stripes {
		f.stripes[i].syncMemLocked(&f.m.mem)
	}
	f.wideCounters.Released++
	rs := []txnlock.Range{r}
	f.recheckPointsLocked(rs)
	f.recheckWideLocked(rs)
	return nil
}

// unlockAll releases every lock of txn in the stripes t names (every
// stripe if t.wide), re-checking the waiters on what was released.
func (f *family) unlockAll(txn txnlock.TxnID, t *famTouch) {
	if t.wide {
		f.unlockAllWide(txn, t)
		return
	}
	for i := range t.numStripes() {
		f.unlockAllPoints(txn, t.stripeAt(i))
	}
}

// unlockAllPoints releases every point lock of txn in one stripe (sp is its
// entry there) and wakes whom that may grant.
func (f *family) unlockAllPoints(txn txnlock.TxnID, sp *stripePoints) {
	s := &f.stripes[sp.idx]
	mu := f.lockStripe(sp.idx)
	if f.dead != nil {
		mu.Unlock()
		return
	}
	var rel *[]txnlock.Range
	if f.wide.Len() > 0 {
		// Wide waiters may overlap what is released: keep the keys.
		rel = new([]txnlock.Range)
	}
	n := f.releaseAllPointsLocked(s, txn, sp, rel)
	if n == 0 {
		mu.Unlock()
		return
	}
	s.syncMemLocked(&f.m.mem)
	s.counters.Released += uint64(n)
	wide := rel != nil && f.wideOverlapsLocked(*rel)
	mu.Unlock()
	if wide {
		f.lockStripes()
		f.recheckWideLocked(*rel)
		f.unlockStripes()
	}
}

// unlockAllWide releases every lock of txn in f, wide and point (t says
// where its points are), with every stripe held.
func (f *family) unlockAllWide(txn txnlock.TxnID, t *famTouch) {
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return
	}
	var wideRel, all []txnlock.Range
	f.tree.ReleaseAll(txn, func(r txnlock.Range) {
		wideRel = append(wideRel, r)
		f.wideChangedLocked(r, txn)
	})
	f.syncTreeMemLocked()
	for i := range f.stripes {
		s := &f.stripes[i]
		// The points' queues are re-checked as they are released, the
		// keys under the wide locks after.
		var rel []txnlock.Range
		n := 0
		t.stripes(func(sp *stripePoints) {
			if sp.idx == i {
				n = f.releaseAllPointsLocked(s, txn, sp, &rel)
			}
		})
		s.syncMemLocked(&f.m.mem)
		s.counters.Released += uint64(n)
		all = append(all, rel...)
	}
	f.recheckPointsLocked(wideRel)
	f.wideCounters.Released += uint64(len(wideRel))
	all = append(all, wideRel...)
	if len(all) > 0 && f.wide.Len() > 0 {
		f.recheckWideLocked(all)
	}
}

// releaseAllPointsLocked releases every point lock of txn in s (sp is its
// entry for s) and empties its list, re-checking the queue of each
// released key (so a point waiter is granted as its key is released) and
// dropping the keys left empty. If rel is not nil, it appends the
// released keys (as [k, k] ranges over copies). It returns how many it
// released.
func (f *family) releaseAllPointsLocked(s *stripe, txn txnlock.TxnID, sp *stripePoints, rel *[]txnlock.Range) int {
	s.forgetTxnLocked(txn)
	n := 0
	sp.list.ReleaseAll(func(l *locktable.Lock) {
		n++
		s.releasedLocked(l)
		f.pointChangedLocked(l, txn)
		if rel != nil {
			*rel = append(*rel, txnlock.Point(bytes.Clone(l.KeyBytes())))
		}
		if l.Queued() > 0 {
			f.recheckQueueLocked(s, l)
		}
		s.dropIfEmptyLocked(l)
	})
	return n
}

// recheckWide re-checks the wide waiters that overlap rs, taking every
// stripe mutex in order, once the caller has dropped its own stripe mutex
// (the lock order forbids taking them while it is held). wide is what
// wideOverlapsLocked(rs) said under that mutex; false costs nothing.
func (f *family) recheckWide(wide bool, rs []txnlock.Range) {
	if !wide {
		return
	}
	f.lockStripes()
	f.recheckWideLocked(rs)
	f.unlockStripes()
}

// intersect returns the keys in both a and b.
func intersect(a, b txnlock.Range) (txnlock.Range, bool) {
	start, end := a.Start(), a.End()
	if b.Start().Compare(start) > 0 {
		start = b.Start()
	}
	if b.End().Compare(end) < 0 {
		end = b.End()
	}
	r, err := txnlock.RangeFromBounds(start, end)
	return r, err == nil
}

// coversAll reports whether the union of pieces covers every key of r.
func coversAll(pieces []txnlock.Range, r txnlock.Range) bool {
	slices.SortFunc(pieces, func(a, b txnlock.Range) int { return a.Start().Compare(b.Start()) })
	at := r.Start()
	for _, p := range pieces {
		if at.Compare(r.End()) >= 0 {
			break
		}
		if p.Start().Compare(at) > 0 {
			return false
		}
		if p.End().Compare(at) > 0 {
			at = p.End()
		}
	}
	return at.Compare(r.End()) >= 0
}
