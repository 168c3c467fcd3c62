package rangelock

import (
	"bytes"
	"cmp"
	"maps"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/locktree"
)

// Status returns a snapshot of every held range and every waiting request,
// one column family at a time (each family's part is consistent: all its
// stripes are held while it is read).
//
// Held locks are reported as maximal ranges with one set of holders: where
// shared ranges of different transactions overlap with different
// endpoints, the overlap is its own entry. A waiter's blockers are
// recomputed at the snapshot.
func (m *Manager) Status() txnlock.Status {
	var st txnlock.Status
	if m.closed.Load() {
		return st
	}
	fams := slices.SortedFunc(maps.Values(*m.fams.Load()), func(a, b *family) int { return cmp.Compare(a.id, b.id) })
	for _, f := range fams {
		f.lockStripes()
		if f.dead == nil {
			st.Locks = append(st.Locks, f.heldLocked()...)
			st.Waits = append(st.Waits, f.waitsLocked()...)
		}
		f.unlockStripes()
	}
	st.Sort()
	return st
}

// holding is what one transaction holds of one range, in one mode.
type holding struct {
	txn  txnlock.TxnID
	r    txnlock.Range
	mode txnlock.Mode
}

// heldLocked returns f's held locks, merged across stripes. Every stripe
// is held.
func (f *family) heldLocked() []txnlock.LockStatus {
	type txnHolds struct{ xs, ss []txnlock.Range }
	byTxn := map[txnlock.TxnID]*txnHolds{}
	add := func(txn txnlock.TxnID, r txnlock.Range, m txnlock.Mode) {
		th := byTxn[txn]
		if th == nil {
			th = &txnHolds{}
			byTxn[txn] = th
		}
		if m == txnlock.Exclusive {
			th.xs = append(th.xs, r)
		} else {
			th.ss = append(th.ss, r)
		}
	}
	f.stripes[0].tree.Ascend(func(l locktree.Lock) bool { // wide locks: one copy
		add(l.Owner, l.Range, l.Mode)
		return true
	})
	for i := range f.stripes {
		f.stripes[i].points.All(func(_ uint64, pl *pointLock) bool {
			r := txnlock.Point(bytes.Clone(pl.key()))
			for i := range pl.nHolders() {
				h := pl.holder(i)
				add(h.txn, r, h.mode)
			}
			return true
		})
	}
	var hs []holding
	for _, txn := range slices.Sorted(maps.Keys(byTxn)) {
		th := byTxn[txn]
		xs := mergeRanges(th.xs)
		for _, r := range xs {
			hs = append(hs, holding{txn, r, txnlock.Exclusive})
		}
		// A key held Exclusive as a point and Shared as part of a wide
		// range is held Exclusive.
		for _, r := range subtractRanges(mergeRanges(th.ss), xs) {
			hs = append(hs, holding{txn, r, txnlock.Shared})
		}
	}
	return sweep(f.id, hs)
}

// sweep cuts the holdings into maximal ranges with one set of holders.
func sweep(cf txnlock.ColumnFamily, hs []holding) []txnlock.LockStatus {
	type event struct {
		at    txnlock.Bound
		start bool
		h     int
	}
	evs := make([]event, 0, 2*len(hs))
	for i, h := range hs {
		evs = append(evs, event{h.r.Start(), true, i}, event{h.r.End(), false, i})
	}
	slices.SortStableFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	active := map[int]bool{}
	var out []txnlock.LockStatus
	for i := 0; i < len(evs); {
		at := evs[i].at
		for ; i < len(evs) && evs[i].at.Compare(at) == 0; i++ {
			if evs[i].start {
				active[evs[i].h] = true
			} else {
				delete(active, evs[i].h)
			}
		}
		if len(active) == 0 || i == len(evs) {
			continue
		}
		r, err := txnlock.RangeFromBounds(at, evs[i].at)
		if err != nil {
			continue
		}
		ls := txnlock.LockStatus{CF: cf, Range: r, Mode: txnlock.Shared}
		for h := range active {
			ls.Holders = append(ls.Holders, hs[h].txn)
			ls.Mode = ls.Mode.Max(hs[h].mode)
		}
		slices.Sort(ls.Holders)
		if n := len(out); n > 0 {
			if p := &out[n-1]; p.Mode == ls.Mode && slices.Equal(p.Holders, ls.Holders) &&
				p.Range.End().Compare(r.Start()) == 0 {
				p.Range, _ = txnlock.RangeFromBounds(p.Range.Start(), r.End())
				continue
			}
		}
		out = append(out, ls)
	}
	return out
}

// subtractRanges returns the parts of rs (sorted, disjoint) outside every
// range of minus (sorted, disjoint).
func subtractRanges(rs, minus []txnlock.Range) []txnlock.Range {
	var out []txnlock.Range
	for _, r := range rs {
		cur, ok := r, true
		for _, m := range minus {
			if !ok || m.Start().Compare(cur.End()) >= 0 {
				break
			}
			if !m.Overlaps(cur) {
				continue
			}
			if left, err := txnlock.RangeFromBounds(cur.Start(), m.Start()); err == nil {
				out = append(out, left)
			}
			cur, _ = txnlock.RangeFromBounds(m.End(), cur.End())
			ok = m.End().Compare(r.End()) < 0
		}
		if ok {
			out = append(out, cur)
		}
	}
	return out
}

// waitsLocked returns f's waiting requests in queue order. Every stripe is
// held.
func (f *family) waitsLocked() []txnlock.WaitStatus {
	var ws []*waiter
	f.forEachWaiterLocked(func(w *waiter) {
		if w.lw.Active() {
			ws = append(ws, w)
		}
	})
	slices.SortFunc(ws, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]txnlock.WaitStatus, len(ws))
	for i, w := range ws {
		out[i] = txnlock.WaitStatus{
			Txn: w.txn, CF: f.id, Range: w.r, Mode: w.mode, Upgrade: w.upgrade,
			Blockers: f.blockersLocked(&w.request, w.seq, nil),
			Since:    w.lw.Since,
		}
	}
	return out
}

// Stats returns the manager's counters. CurrentLocks counts held point
// locks (a key with several holders once) and held wide (transaction,
// range) entries. LockMemory is exact; a wide lock counts once per stripe,
// as it is stored.
func (m *Manager) Stats() txnlock.Stats {
	var s txnlock.Stats
	for _, f := range *m.fams.Load() {
		f.lockStripes()
		f.wideCounters.AddTo(&s)
		s.Escalations += f.escalations
		s.CurrentLocks += int64(f.stripes[0].tree.Len())
		for i := range f.stripes {
			st := &f.stripes[i]
			st.counters.AddTo(&s)
			s.CurrentLocks += int64(st.points.Len())
			s.LockMemory += st.lockMemory()
		}
		f.unlockStripes()
	}
	return s
}
