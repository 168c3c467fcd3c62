package rangelock

import (
	"bytes"
	"errors"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/shell"
)

// A release re-checks only the waiters that overlap what it freed: the
// point waiters of a released key (its Lock's Grants: recheckQueueLocked),
// those under a released wide range (found through the ordered index:
// recheckPointsLocked), and the overlapping wide waiters (found through
// locktable.RangeQueue: recheckWideLocked, with every stripe held: a family with wide
// waiters is fused, so a point's latch is every latch). A waiter is
// claimed, recorded and woken under the same lock(s) as the release.

// Unlock releases the part of r that txn holds in cf: all of r must be
// held (in any mode), else ErrNotHeld and nothing changes. Unlocking part
// of a held range keeps the rest of it.
func (m *Manager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	k, point := r.PointKey()
	var rangeErr error
	if !point && !r.Valid() {
		rangeErr = txnlock.ErrInvalidRange
	}
	f, err := m.sh.CheckUnlock(txn, cf, rangeErr)
	if err == nil {
		err = f.unlock(txn, r, k, point)
	}
	if err != nil {
		return shell.UnlockErr(txn, cf, r, err)
	}
	return nil
}

// UnlockAll releases every lock txn holds, in every column family, one
// point at a time and then its wide locks family by family, at a cost
// proportional to what it holds.
func (m *Manager) UnlockAll(txn txnlock.TxnID) error {
	if err := m.sh.CheckUnlockAll(txn); err != nil {
		return err
	}
	for {
		// Take what txn still holds from its record, then release it
		// under the latches (they come before the record in the lock
		// order). A grant or an escalation may add to the record
		// meanwhile: Next finds it.
		l, h, si, home, wide, done := m.sh.Txns.Next(txn, m.hashKeyString)
		if done {
			return nil
		}
		f := m.sh.Fams.At(home)
		if f == nil {
			return nil // closed meanwhile
		}
		if wide {
			f.unlockAllWide(txn)
			continue
		}
		// l may have been released meanwhile (by a concurrent Unlock
		// of txn) and even recycled: release it only if it is still
		// under h and held by txn.
		err := f.unlockPoint(txn, si, func(s *stripe) *locktable.Lock {
			if s.points.Has(h, l) {
				return l
			}
			return nil
		})
		if err == txnlock.ErrClosed || err == txnlock.ErrUnknownColumnFamily {
			return nil // the family was closed or dropped meanwhile
		}
	}
}

// unlock releases r of txn (Manager.Unlock); r is [k, k] if point.
func (f *family) unlock(txn txnlock.TxnID, r txnlock.Range, k []byte, point bool) error {
	if point {
		h, si := f.m.hashKey(k)
		err := f.unlockPoint(txn, si, func(s *stripe) *locktable.Lock {
			// Without wide locks of txn, [k, k] is only a point of its
			// stripe. (wideSeen is set, and the record notes txn wide,
			// with every stripe held, as a wide lock is acquired.)
			if f.wideSeen && f.m.sh.Txns.Wide(txn, f.idx) {
				return nil
			}
			return s.lockOfLocked(h, k)
		})
		if err != errWide {
			return err
		}
	}
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return f.dead
	}
	return f.unlockWideLocked(txn, r)
}

// errWide is unlockPoint's answer when its find found nothing and wide
// locks of the transaction may hold the key: only a release with every
// latch can tell.
var errWide = errors.New("rangelock: the key may be held in a wide lock")

// unlockPoint releases txn's hold on the Lock that find returns in stripe
// si (under its latch; nil: none), re-checks the point waiters of its key
// and the wide waiters over it, and drops it once nobody holds or waits
// for it. ErrNotHeld if find finds nothing or txn does not hold it.
func (f *family) unlockPoint(txn txnlock.TxnID, si int, find func(s *stripe) *locktable.Lock) error {
	s := &f.stripes[si]
	mu := f.lockStripe(si)
	if f.dead != nil {
		mu.Unlock()
		return f.dead
	}
	l := find(s)
	if l == nil && f.wideSeen && f.m.sh.Txns.Wide(txn, f.idx) {
		mu.Unlock()
		return errWide
	}
	if l == nil || !s.releaseHoldLocked(l, txn) {
		mu.Unlock()
		return txnlock.ErrNotHeld
	}
	s.counters.Released++
	s.syncMemLocked(&f.m.mem)
	if l.Queued() > 0 {
		f.recheckQueueLocked(s, l)
	}
	if f.wide.Len() == 0 {
		s.dropIfEmptyLocked(l)
		mu.Unlock()
		return nil
	}
	// Wide waiters: the family is fused, so mu is its one latch.
	rs := []txnlock.Range{txnlock.Point(bytes.Clone(l.KeyBytes()))}
	s.dropIfEmptyLocked(l)
	f.recheckWideLocked(rs)
	f.unlockStripes()
	return nil
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
	var points []*locktable.Lock
	union = append(union, wide...)
	f.pointsOfLocked(txn, func(l *locktable.Lock, _ txnlock.Mode) bool {
		if r.Contains(l.KeyBytes()) {
			points = append(points, l)
			union = append(union, txnlock.Point(l.KeyBytes()))
		}
		return true
	})
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
	for _, l := range points {
		_, si := f.m.hashKey(l.KeyBytes())
		s := &f.stripes[si]
		s.releaseHoldLocked(l, txn)
		s.dropIfEmptyLocked(l) // a Lock with waiters stays, for the re-check below
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

// unlockAllWide releases every wide lock of txn in f (its points go one
// by one, before), re-checking the waiters under them.
func (f *family) unlockAllWide(txn txnlock.TxnID) {
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return
	}
	var rel []txnlock.Range
	f.tree.ReleaseAll(txn, func(r txnlock.Range) {
		rel = append(rel, r)
		f.wideChangedLocked(r, txn)
	})
	if len(rel) == 0 {
		return
	}
	f.syncTreeMemLocked()
	f.wideCounters.Released += uint64(len(rel))
	f.recheckPointsLocked(rel)
	f.recheckWideLocked(rel)
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
	r, err := txnlock.NewRange(start, end)
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
