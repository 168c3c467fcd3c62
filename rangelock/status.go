package rangelock

import (
	"bytes"
	"maps"
	"slices"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/locktree"
)

// Status returns a snapshot of every held range and every waiting request,
// one column family at a time (each family's part is consistent: all its
// stripes are held while it is read).
//
// Held locks are reported as maximal ranges with one set of holders: where
// shared ranges of different transactions overlap with different
// endpoints, the overlap is its own entry. Whom each waiter waits for is
// what its lock-wait timeout would report.
func (m *Manager) Status() txnlock.Status {
	// The waits are answered by waitsForLocked: under the latch in a
	// family with wide activity; in one of points only from a copy taken
	// under the latches (locktable.Snapshot) after them, so that a scrape
	// costs a hot key one copy of its queue.
	var st txnlock.Status
	if m.sh.Closed() {
		return st
	}
	var snap locktable.Snapshot
	var queues txnlock.Status // the rows of snap: its waits, and the locks it repeats
	for _, f := range m.sh.Fams.All {
		f.lockStripes()
		if f.dead != nil {
			f.unlockStripes()
			continue
		}
		held := f.holdingsLocked()
		if f.wideActiveLocked() {
			f.forEachWaiterLocked(func(w *waiter) {
				if w.lw.Active() { // a failed waiter is leaving: it leaves no trace
					st.Waits = append(st.Waits, txnlock.WaitStatus{
						Txn: w.txn, CF: f.id, Range: w.r, Mode: w.mode, Upgrade: w.upgrade,
						Blockers: f.waitsForLocked(&w.request, w.seq, w.lock, w.lw, nil),
						Since:    w.lw.Since,
					})
				}
			})
		} else {
			for i := range f.stripes {
				f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
					if l.Queued() > 0 {
						snap.Add(l)
					}
					return true
				})
			}
		}
		f.unlockStripes()
		snap.AppendTo(&queues, f.id)
		st.Waits = append(st.Waits, queues.Waits...)
		queues = txnlock.Status{Locks: queues.Locks[:0], Waits: queues.Waits[:0]}
		st.Locks = append(st.Locks, sweep(f.id, mergeHoldings(held))...)
	}
	st.Sort()
	return st
}

// holdingsLocked copies what f holds: its wide locks and its points.
// Every stripe is held.
func (f *family) holdingsLocked() []holding {
	var held []holding
	f.tree.Ascend(func(l locktree.Lock) bool {
		held = append(held, holding{l.Owner, l.Range.Clone(), l.Mode})
		return true
	})
	for i := range f.stripes {
		f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
			if l.Held() {
				r := txnlock.Point(bytes.Clone(l.KeyBytes()))
				l.Holders(func(hd *locktable.Holder) bool {
					held = append(held, holding{hd.Txn(), r, hd.Mode()})
					return true
				})
			}
			return true
		})
	}
	return held
}

// holding is what one transaction holds of one range, in one mode.
type holding struct {
	txn  txnlock.TxnID
	r    txnlock.Range
	mode txnlock.Mode
}

// mergeHoldings merges each transaction's holdings into maximal ranges:
// its Exclusive ones, then its Shared ones outside them.
func mergeHoldings(held []holding) []holding {
	type txnHolds struct{ xs, ss []txnlock.Range }
	byTxn := map[txnlock.TxnID]*txnHolds{}
	for _, h := range held {
		th := byTxn[h.txn]
		if th == nil {
			th = &txnHolds{}
			byTxn[h.txn] = th
		}
		if h.mode == txnlock.Exclusive {
			th.xs = append(th.xs, h.r)
		} else {
			th.ss = append(th.ss, h.r)
		}
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
	return hs
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
		r, err := txnlock.NewRange(at, evs[i].at)
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
				p.Range, _ = txnlock.NewRange(p.Range.Start(), r.End())
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
			if left, err := txnlock.NewRange(cur.Start(), m.Start()); err == nil {
				out = append(out, left)
			}
			cur, _ = txnlock.NewRange(m.End(), cur.End())
			ok = m.End().Compare(r.End()) < 0
		}
		if ok {
			out = append(out, cur)
		}
	}
	return out
}

// AddStats adds f's counters to s (shell.Family; the manager's Stats sums
// them): CurrentLocks counts held point locks (a key with several holders
// once) and held wide (transaction, range) entries; LockMemory is exact.
func (f *family) AddStats(s *txnlock.Stats) {
	f.lockStripes()
	defer f.unlockStripes()
	f.addCountersLocked(s)
	s.CurrentLocks += int64(f.tree.Len())
	s.LockMemory += f.treeMemory()
	for i := range f.stripes {
		st := &f.stripes[i]
		s.CurrentLocks += st.held
		s.LockMemory += st.lockMemory()
	}
}

// addCountersLocked adds f's counters (requests, waits, escalations) to
// s. Every stripe is held.
func (f *family) addCountersLocked(s *txnlock.Stats) {
	f.wideCounters.AddTo(s)
	s.Escalations += f.escalations
	for i := range f.stripes {
		f.stripes[i].counters.AddTo(s)
	}
}
