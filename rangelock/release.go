package rangelock

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// unlock releases r of txn (Manager.Unlock).
func (f *family) unlock(txn txnlock.TxnID, r txnlock.Range) error {
	if k, ok := r.PointKey(); ok {
		s := &f.stripes[f.m.stripeOf(k)]
		s.mu.Lock()
		if f.dead != nil {
			err := f.dead
			s.mu.Unlock()
			return err
		}
		// Without wide locks of txn, [k, k] is only in its stripe. (Both
		// wideSeen and the table entry are set with s held.)
		if !f.wideSeen || !f.m.txns.hasWide(txn, f) {
			if err := s.tree.Release(txn, r, nil); err != nil {
				s.mu.Unlock()
				return txnlock.ErrNotHeld
			}
			s.counters.Released++
			s.syncMemLocked(&f.m.mem)
			rs := []txnlock.Range{r}
			f.recheckStripeLocked(s, rs)
			wide := f.wideOverlapsLocked(rs)
			s.mu.Unlock()
			if wide {
				f.lockStripes()
				f.recheckWideLocked(rs)
				f.unlockStripes()
			}
			return nil
		}
		s.mu.Unlock()
	}
	f.lockStripes()
	defer f.unlockStripes()
	if f.dead != nil {
		return f.dead
	}
	return f.unlockWideLocked(txn, r)
}

// unlockWideLocked releases r of txn from every stripe: the copies of
// wide locks and the points of each stripe. All of r must be held, in the
// family as a whole. Every stripe is held.
func (f *family) unlockWideLocked(txn txnlock.TxnID, r txnlock.Range) error {
	if !f.coveredLocked(&request{txn: txn, r: r, stripe: wideStripe}, txnlock.Shared) {
		// Some of r is held as points, each in its own stripe: find
		// what each stripe holds of r, and check that together it is
		// all of r before changing anything.
		pieces := make([][]txnlock.Range, len(f.stripes))
		var union []txnlock.Range
		for i := range f.stripes {
			f.stripes[i].tree.Holds(txn, func(h txnlock.Range, _ txnlock.Mode) bool {
				if x, ok := intersect(h, r); ok {
					pieces[i] = append(pieces[i], x)
					union = append(union, x)
				}
				return true
			})
		}
		if !coversAll(union, r) {
			return txnlock.ErrNotHeld
		}
		for i := range f.stripes {
			s := &f.stripes[i]
			for _, x := range pieces[i] {
				if err := s.tree.Release(txn, x, nil); err != nil {
					panic("rangelock: internal error: releasing a held piece: " + err.Error())
				}
			}
			s.syncMemLocked(&f.m.mem)
		}
	} else {
		for i := range f.stripes {
			s := &f.stripes[i]
			if err := s.tree.Release(txn, r, nil); err != nil {
				panic("rangelock: internal error: releasing a covered range: " + err.Error())
			}
			s.syncMemLocked(&f.m.mem)
		}
	}
	f.wideCounters.Released++
	rs := []txnlock.Range{r}
	for i := range f.stripes {
		f.recheckStripeLocked(&f.stripes[i], rs)
	}
	f.recheckWideLocked(rs)
	return nil
}

// unlockAll releases every lock of txn in the stripes t names (every
// stripe if t.wide), re-checking the waiters on what was released.
func (f *family) unlockAll(txn txnlock.TxnID, t *famTouch) {
	if t.wide {
		f.lockStripes()
		defer f.unlockStripes()
		if f.dead != nil {
			return
		}
		var all []txnlock.Range
		for i := range f.stripes {
			s := &f.stripes[i]
			var rel []txnlock.Range
			s.tree.ReleaseAll(txn, func(r txnlock.Range) { rel = append(rel, r) })
			if len(rel) == 0 {
				continue
			}
			s.syncMemLocked(&f.m.mem)
			f.wideCounters.Released += uint64(len(rel))
			f.recheckStripeLocked(s, rel)
			all = append(all, rel...)
		}
		if len(all) > 0 && f.wide.Len() > 0 {
			f.recheckWideLocked(all)
		}
		return
	}
	t.forEachStripe(func(i int) {
		s := &f.stripes[i]
		var rel []txnlock.Range
		s.mu.Lock()
		if f.dead == nil {
			s.tree.ReleaseAll(txn, func(r txnlock.Range) { rel = append(rel, r) })
		}
		if len(rel) == 0 {
			s.mu.Unlock()
			return
		}
		s.syncMemLocked(&f.m.mem)
		s.counters.Released += uint64(len(rel))
		f.recheckStripeLocked(s, rel)
		wide := f.wideOverlapsLocked(rel)
		s.mu.Unlock()
		if wide {
			f.lockStripes()
			f.recheckWideLocked(rel)
			f.unlockStripes()
		}
	})
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
		if p.Start().Compare(at) > 0 {
			return false
		}
		if p.End().Compare(at) > 0 {
			at = p.End()
		}
	}
	return at.Compare(r.End()) >= 0
}
