package rangelock

import (
	"fmt"
	"slices"

	"github.com/txnlock/txnlock/internal/locktable"
)

// checkInvariants walks every open column family with all its stripes held
// and returns the first broken invariant, or nil. Callers run it while no
// request is between its steps (a waiter may sleep in Wait). Per stripe:
//   - every Lock is under its key's hash, in its key's stripe, not empty,
//     and its own invariants hold (locktable.Lock.Verify) where nothing
//     wide can block its waiters;
//   - the family is fused exactly while it has wide activity, and then
//     every stripe has an ordered index, which holds exactly the table's
//     Locks;
//   - every holder is at its slot in its transaction's live record and
//     names its family;
//   - every queued waiter names its Lock, Det().Own counts those that are
//     not shared, and no shared one has an overlapping wide waiter queued
//     before it (the detector's Blockers of it are its key's holders);
//   - the held count and the point memory match the Locks;
//   - every active waiter that is not shared keeps the answer to the
//     detector that a fresh walk gives (checkKeptLocked).
func (m *Manager) checkInvariants() error {
	if m.sh.Closed() {
		return nil
	}
	for _, f := range m.sh.Fams.All {
		f.lockStripes()
		err := f.checkLocked()
		f.unlockStripes()
		if err != nil {
			return fmt.Errorf("cf %d: %w", f.id, err)
		}
	}
	return nil
}

func (f *family) checkLocked() error {
	if fused, active := f.fused.Load(), f.wideActiveLocked(); f.dead == nil && fused != active {
		return fmt.Errorf("fused is %v with wide activity %v", fused, active)
	}
	if f.dead == nil && (f.ordered != nil) != f.fused.Load() {
		return fmt.Errorf("an ordered index: %v; fused: %v", f.ordered != nil, f.fused.Load())
	}
	n := 0
	for i := range f.stripes {
		n += f.stripes[i].points.Len()
	}
	if f.ordered != nil && f.ordered.Len() != n {
		return fmt.Errorf("the ordered index has %d Locks, the tables %d", f.ordered.Len(), n)
	}
	for i := range f.stripes {
		if err := f.checkStripeLocked(&f.stripes[i]); err != nil {
			return fmt.Errorf("stripe %d: %w", i, err)
		}
	}
	return f.checkWaitersLocked()
}

// checkWaitersLocked: every active waiter that is not shared keeps the
// answer to the detector that a fresh walk gives (checkKeptLocked), and
// none could be granted now (checkNoneGrantableLocked). A wait fails
// without the latch (its timeout, a victim), and a failed waiter counts no
// more although it is still linked: the checks hold while none is failed,
// and a failure seen after a check voids it.
func (f *family) checkWaitersLocked() error {
	if f.dead != nil {
		return nil
	}
	failed := func() bool {
		any := false
		f.forEachWaiterLocked(func(w *waiter) { any = any || !w.lw.Active() })
		return any
	}
	if failed() {
		return nil
	}
	err := f.checkKeptLocked()
	if err == nil {
		err = f.checkNoneGrantableLocked()
	}
	if err != nil && failed() {
		return nil
	}
	return err
}

// checkNoneGrantableLocked: no waiter could be granted now (a release
// grants what it can under the latch it releases under, and so does a
// failed waiter when it leaves). Every waiter is active.
func (f *family) checkNoneGrantableLocked() error {
	var err error
	f.forEachWaiterLocked(func(w *waiter) {
		switch {
		case err != nil:
		case !w.point():
			if !f.wideBlockedLocked(&w.request, w.seq) {
				err = fmt.Errorf("%v waits for %v %v, which could be granted", w.txn, w.r, w.mode)
			}
		case w.lock.Front() == w.lw:
			for lw := range f.pointGrantsLocked(w.lock) {
				err = fmt.Errorf("%v waits for %v %v, which could be granted", lw.Txn(), lw.Lock.Range, lw.Lock.Mode)
				break
			}
		}
	})
	return err
}

func (f *family) checkStripeLocked(s *stripe) error {
	var held, mem int64
	var err error
	s.points.All(func(h uint64, l *locktable.Lock) bool {
		err = f.checkLockLocked(s, h, l)
		if l.Held() {
			held++
			mem += pointLockBytes + keyBytes(len(l.Key()))
			l.Holders(func(hd *locktable.Holder) bool {
				mem += holdBytes
				if !f.m.sh.Txns.Recorded(hd) || hd.Home != f.idx {
					err = fmt.Errorf("key %q: the hold of %v is not at its slot in its live record, or names family %d", l.Key(), hd.Txn(), hd.Home)
				}
				return err == nil
			})
		}
		return err == nil
	})
	switch {
	case err != nil:
		return err
	case held != s.held:
		return fmt.Errorf("held %d, counted %d", s.held, held)
	case mem != s.pointMem:
		return fmt.Errorf("point memory %d, counted %d", s.pointMem, mem)
	}
	return nil
}

func (f *family) checkLockLocked(s *stripe, h uint64, l *locktable.Lock) error {
	key := l.KeyBytes()
	if kh, si := f.m.hashKey(key); kh != h || si != int(s.idx) {
		return fmt.Errorf("key %q is under the wrong hash or stripe", key)
	}
	if l.Empty() {
		return fmt.Errorf("key %q: an empty Lock is kept", key)
	}
	if f.ordered != nil {
		if o, ok := f.ordered.Get(l); !ok || o != l {
			return fmt.Errorf("key %q is not in the ordered index", key)
		}
	}
	if f.tree.Len() == 0 && f.wide.Len() == 0 {
		if err := l.Verify(); err != nil {
			return err
		}
	}
	own := 0
	for lw := l.Front(); lw != nil; lw = lw.Next() {
		w := waiterOf(lw)
		switch {
		case w.lock != l || !w.point():
			return fmt.Errorf("key %q: a waiter of %v names another Lock", key, w.txn)
		case !w.shared:
			own++
		case f.linkedWideAheadLocked(w):
			return fmt.Errorf("key %q: shared waiter of %v behind a wide waiter", key, w.txn)
		}
	}
	if l.Queued() == 0 {
		return nil
	}
	if det := l.Det(); det.Own != own {
		return fmt.Errorf("key %q: Own is %d, counted %d", key, det.Own, own)
	}
	return nil
}

// linkedWideAheadLocked reports whether a linked wide waiter that overlaps
// point waiter w was queued before it.
func (f *family) linkedWideAheadLocked(w *waiter) bool {
	found := false
	f.wideOverlapping(w.r, w.seq, func(*waiter) bool {
		found = true
		return false
	})
	return found
}

// checkKeptLocked asks every active waiter that is not shared for its
// nearest blockers, kept or fresh, and compares them with a fresh walk: a
// change that marked no kept answer shows at the next check after it
// (the check keeps every answer, as a detector's question does).
func (f *family) checkKeptLocked() error {
	var err error
	f.forEachWaiterLocked(func(w *waiter) {
		if err != nil || w.shared || !w.lw.Active() {
			return
		}
		kept := f.keptBlockersLocked(w, nil)
		if fresh := f.nearestBlockersLocked(&w.request, w.seq, nil); !slices.Equal(kept, fresh) {
			err = fmt.Errorf("%v waiting for %v keeps blockers %v, a fresh walk finds %v", w.txn, w.r, kept, fresh)
		}
	})
	return err
}
