package rangelock

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/waitsfor"
	"github.com/txnlock/txnlock/locktree"
)

// Status returns a snapshot of every held range and every waiting request,
// one column family at a time (each family's part is consistent: all its
// stripes are held while it is read).
//
// Held locks are reported as maximal ranges with one set of holders: where
// shared ranges of different transactions overlap with different
// endpoints, the overlap is its own entry. Whom each waiter waits for
// follows txnlock.WaitStatus.Blockers' rule. Under the stripe mutexes
// Status only copies the locks and the waiters; merging, the blockers and
// the sorting are built after they are released.
func (m *Manager) Status() txnlock.Status {
	var st txnlock.Status
	if m.closed.Load() {
		return st
	}
	fams := slices.SortedFunc(maps.Values(*m.fams.Load()), func(a, b *family) int { return cmp.Compare(a.id, b.id) })
	for _, f := range fams {
		var snap familySnap
		f.lockStripes()
		live := f.dead == nil
		if live {
			snap.copyLocked(f)
		}
		f.unlockStripes()
		if live {
			st.Locks = append(st.Locks, sweep(f.id, mergeHoldings(snap.held))...)
			st.Waits = append(st.Waits, snap.waits(f.id)...)
		}
	}
	st.Sort()
	return st
}

// familySnap is a copy of a family's locks and waiters.
type familySnap struct {
	held    []holding
	waiters []waitSnap // in seq order
}

type waitSnap struct {
	req   waitsfor.Request
	r     txnlock.Range
	point bool // r is one key, queued on its key
	since time.Time
	seq   uint64
	// idle, holder: the waiter's request.idle and request.holder.
	idle, holder bool
}

// copyLocked copies f's locks and active waiters. Every stripe is held.
func (s *familySnap) copyLocked(f *family) {
	f.tree.Ascend(func(l locktree.Lock) bool {
		s.held = append(s.held, holding{l.Owner, l.Range.Clone(), l.Mode})
		return true
	})
	for i := range f.stripes {
		f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
			if !l.Held() {
				return true // only waited for
			}
			r := txnlock.Point(bytes.Clone(l.KeyBytes()))
			l.Holders(func(hd *locktable.Holder) bool {
				s.held = append(s.held, holding{hd.Txn(), r, hd.Mode()})
				return true
			})
			return true
		})
	}
	f.forEachWaiterLocked(func(w *waiter) {
		if w.lw.Active() { // a failed waiter is leaving: it leaves no trace
			// w.r is the waiter's own copy, never changed.
			s.waiters = append(s.waiters, waitSnap{
				req: waitsfor.Request{Txn: w.txn, Mode: w.mode, Upgrade: w.upgrade},
				r:   w.r, point: w.point(), since: w.lw.Since, seq: w.seq, idle: w.idle, holder: w.holder,
			})
		}
	})
	slices.SortFunc(s.waiters, func(a, b waitSnap) int { return cmp.Compare(a.seq, b.seq) })
}

// waits builds the Status rows of the copied waiters, each by the rule
// the manager decides by (queuedAheadLocked, nearestBlockersLocked). A
// point waiter's queue is its key's point waiters, upgrades first as the
// key's Lock queues them, and the wide waiters over the key, in seq order,
// scanned once (waitsfor.Scanner); a point waiter whose transaction holds
// what a wide waiter ahead waits for skips as the manager does
// (pointExact). A wide waiter looks at every overlapping waiter ahead
// of it, point upgrades first; those lie on keys apart and are not one
// queue, so it lists the nearest on each part of its range
// (waitsfor.Spread), less those it skips. Where a wide request is on a
// waiter's list, or the waiter is wide, the list also names the
// conflicting holders that no listed request waits for itself: a range
// can overlap holders that the requests ahead of it do not.
func (s *familySnap) waits(cf txnlock.ColumnFamily) []txnlock.WaitStatus {
	out := make([]txnlock.WaitStatus, len(s.waiters))
	var wide []int
	byKey := map[string][]int{}
	for i, w := range s.waiters {
		if w.point {
			k := string(w.r.Start().Key())
			byKey[k] = append(byKey[k], i)
		} else {
			wide = append(wide, i)
		}
	}
	// The holders of each waiting key: its point locks, and the wide
	// locks over it.
	pointHeld := map[string][]holding{}
	for _, h := range s.held {
		if k, ok := h.r.PointKey(); ok {
			if _, waited := byKey[string(k)]; waited {
				pointHeld[string(k)] = append(pointHeld[string(k)], h)
			}
		}
	}
	heldIdx := newSpanIndex(len(s.held), func(i int) txnlock.Range { return s.held[i].r })
	heldBy := map[txnlock.TxnID][]holding{}
	for _, h := range s.held {
		heldBy[h.txn] = append(heldBy[h.txn], h)
	}
	waitIdx := newSpanIndex(len(s.waiters), func(i int) txnlock.Range { return s.waiters[i].r })
	var found []int // what an index query found
	var ahead []waitsfor.Request
	for k, idx := range byKey {
		// Upgrades are at the front of the key's queue, ahead of
		// everything (the wide waiters' merge below skips them).
		slices.SortStableFunc(idx, func(a, b int) int {
			return cmpUpgrade(s.waiters[a].req.Upgrade, s.waiters[b].req.Upgrade)
		})
		key := txnlock.Point([]byte(k))
		held := pointHeld[k]
		found = heldIdx.appendOverlapping(found[:0], key)
		for _, j := range found {
			if _, point := s.held[j].r.PointKey(); !point {
				held = append(held, s.held[j])
			}
		}
		sc := waitsfor.NewScanner(holdersOf(held), ahead)
		var blockers []txnlock.TxnID // one array for the key's lists
		wi := 0
		var wideAhead []int               // the wide waiters of the merged queue so far
		var merged []int                  // the merged queue so far
		var pointAt map[txnlock.TxnID]int // the key's point waiters so far, once needed
		// skipAhead: a request of the merged queue so far may skip one
		// ahead of it (an upgrade, or its transaction holds a lock), so
		// the scan's rule, that a request waits for those ahead of it,
		// may not hold behind it.
		skipAhead := false
		for _, i := range idx {
			for ; !s.waiters[i].req.Upgrade && wi < len(wide) && wide[wi] < i; wi++ {
				if o := s.waiters[wide[wi]]; o.r.Overlaps(key) {
					sc.Push(o.req)
					skipAhead = skipAhead || (len(merged) > 0 && (o.holder || len(heldBy[o.req.Txn]) > 0))
					wideAhead = append(wideAhead, wide[wi])
					merged = append(merged, wide[wi])
				}
			}
			w := s.waiters[i]
			n := len(blockers)
			blockers = sc.Next(blockers, w.req)
			merged = append(merged, i)
			b := blockers[n:len(blockers):len(blockers)]
			switch {
			case len(wideAhead) == 0:
			case !w.req.Upgrade && (skipAhead || s.skipsWide(w, heldBy[w.req.Txn], wideAhead)):
				b = s.pointExact(w, merged[:len(merged)-1], heldBy, held)
			default:
				// The listed requests: the wide ones ahead, and the
				// listed points of the key.
				cands := wideAhead[:len(wideAhead):len(wideAhead)]
				if pointAt == nil {
					pointAt = map[txnlock.TxnID]int{}
					for _, j := range merged[:len(merged)-1] {
						if o := s.waiters[j]; o.point {
							pointAt[o.req.Txn] = j
						}
					}
				}
				for _, t := range b {
					if j, ok := pointAt[t]; ok {
						cands = append(cands, j)
					}
				}
				b = s.unreachedHolders(b, w, held, cands)
			}
			out[i] = s.row(cf, w, b)
			if pointAt != nil {
				pointAt[w.req.Txn] = i
			}
			skipAhead = skipAhead || (len(merged) > 1 && (w.req.Upgrade || w.holder || len(heldBy[w.req.Txn]) > 0))
		}
		ahead = sc.Ahead()
	}
	for _, i := range wide {
		w := s.waiters[i]
		var overlapping []int
		var queued []waitsfor.Queued
		mine := heldBy[w.req.Txn]
		found = waitIdx.appendOverlapping(found[:0], w.r)
		for _, j := range found {
			if o := s.waiters[j]; j < i && o.req.Txn != w.req.Txn {
				overlapping = append(overlapping, j)
			}
		}
		// In the order w sees them (queueOrder): point upgrades first,
		// each at the front of its key's queue.
		slices.SortFunc(overlapping, func(a, b int) int {
			wa, wb := s.waiters[a], s.waiters[b]
			return cmp.Or(cmpUpgrade(wa.req.Upgrade && wa.point, wb.req.Upgrade && wb.point), cmp.Compare(a, b))
		})
		for _, j := range overlapping {
			o := s.waiters[j]
			queued = append(queued, s.queued(o, mine, heldBy))
		}
		// The requests w skips are not ahead of it (waitsfor.Skipped).
		skip := waitsfor.Skipped(queued, w.holder)
		kept, keptQ := overlapping[:0], queued[:0]
		for k, j := range overlapping {
			if !skip[k] {
				kept, keptQ = append(kept, j), append(keptQ, queued[k])
			}
		}
		overlapping = kept
		var held []holding
		found = heldIdx.appendOverlapping(found[:0], w.r)
		for _, j := range found {
			held = append(held, s.held[j])
		}
		// The requests ahead lie on keys apart: waitsfor.Spread.
		var b []txnlock.TxnID
		if !w.req.Upgrade {
			b = waitsfor.Spread(nil, keptQ, w.req.Txn, w.req.Mode)
		}
		if len(b) == 0 {
			b = waitsfor.Holders(nil, holdersOf(held), w.req.Txn, w.req.Mode)
		}
		out[i] = s.row(cf, w, s.unreachedHolders(b, w, held, overlapping))
	}
	return out
}

// skipsWide reports whether point waiter w, whose transaction holds mine,
// may skip one of the wide waiters ahead (indices of s.waiters): one that
// waits for a holding of mine (and then those behind it too), or, if w is
// a holder's request, an idle one (waitsfor.Skipped). pointExact then
// finds its list.
func (s *familySnap) skipsWide(w waitSnap, mine []holding, wideAhead []int) bool {
	for _, j := range wideAhead {
		if o := s.waiters[j]; heldConflict(mine, o) || (w.holder && o.idle) {
			return true
		}
	}
	return false
}

// queued is waiter o as a request ahead of a request of the transaction
// holding mine sees it (waitsfor.Queued).
func (s *familySnap) queued(o waitSnap, mine []holding, heldBy map[txnlock.TxnID][]holding) waitsfor.Queued {
	return waitsfor.Queued{
		Txn: o.req.Txn, Mode: o.req.Mode, Range: o.r,
		WaitsForT: heldConflict(mine, o),
		Idle:      o.idle,
		MaySkip:   o.req.Upgrade || o.holder || len(heldBy[o.req.Txn]) > 0,
	}
}

// pointExact is the list of point waiter w whose key's queue ahead of it
// (ahead, in queue order) has wide waiters and a request that may skip
// one of them (w itself, or one ahead of it, whose transaction holds what
// the wide waiter waits for), as the manager finds it
// (nearestBlockersLocked): w skips the wide waiters that waitsfor.Skipped
// marks and waits for the others and the point requests ahead on its key,
// listed by waitsfor.Spread, and for the conflicting holders none of those
// reaches. It walks the key's queue ahead of w: only a key that holders'
// requests share with wide waiters costs this.
func (s *familySnap) pointExact(w waitSnap, ahead []int, heldBy map[txnlock.TxnID][]holding, held []holding) []txnlock.TxnID {
	mine := heldBy[w.req.Txn]
	var idx []int
	var queued []waitsfor.Queued
	for _, j := range ahead {
		if o := s.waiters[j]; o.req.Txn != w.req.Txn {
			idx = append(idx, j)
			queued = append(queued, s.queued(o, mine, heldBy))
		}
	}
	skip := waitsfor.Skipped(queued, w.holder)
	keptIdx, keptQ := idx[:0], queued[:0]
	for k, j := range idx {
		if !skip[k] || s.waiters[j].point {
			keptIdx, keptQ = append(keptIdx, j), append(keptQ, queued[k])
		}
	}
	b := waitsfor.Spread(nil, keptQ, w.req.Txn, w.req.Mode)
	if len(b) == 0 {
		b = waitsfor.Holders(nil, holdersOf(held), w.req.Txn, w.req.Mode)
	}
	return s.unreachedHolders(b, w, held, keptIdx)
}

// cmpUpgrade orders upgrades before other requests.
func cmpUpgrade(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func (s *familySnap) row(cf txnlock.ColumnFamily, w waitSnap, blockers []txnlock.TxnID) txnlock.WaitStatus {
	return txnlock.WaitStatus{
		Txn: w.req.Txn, CF: cf, Range: w.r, Mode: w.req.Mode, Upgrade: w.req.Upgrade,
		Blockers: blockers, Since: w.since,
	}
}

// heldConflict reports whether waiter o conflicts with one of mine, the
// holdings of another transaction.
func heldConflict(mine []holding, o waitSnap) bool {
	for _, h := range mine {
		if h.txn != o.req.Txn && !h.mode.Compatible(o.req.Mode) && h.r.Overlaps(o.r) {
			return true
		}
	}
	return false
}

// spanIndex finds which of n ranges overlap a range, in time
// proportional to what it finds when the ranges are short: it keeps them
// sorted by start, with the greatest end of each prefix, so a scan back
// from the last range that starts before the query ends stops where no
// earlier range ends after the query starts.
type spanIndex struct {
	rangeOf func(i int) txnlock.Range
	order   []int
	maxEnd  []txnlock.Bound
}

func newSpanIndex(n int, rangeOf func(i int) txnlock.Range) *spanIndex {
	x := &spanIndex{rangeOf: rangeOf, order: make([]int, n), maxEnd: make([]txnlock.Bound, n)}
	for i := range x.order {
		x.order[i] = i
	}
	slices.SortStableFunc(x.order, func(a, b int) int { return rangeOf(a).Start().Compare(rangeOf(b).Start()) })
	for k, i := range x.order {
		e := rangeOf(i).End()
		if k > 0 && x.maxEnd[k-1].Compare(e) > 0 {
			e = x.maxEnd[k-1]
		}
		x.maxEnd[k] = e
	}
	return x
}

// appendOverlapping appends to dst, in ascending order, the ranges that
// overlap r.
func (x *spanIndex) appendOverlapping(dst []int, r txnlock.Range) []int {
	n := len(dst)
	hi, _ := slices.BinarySearchFunc(x.order, r.End(), func(i int, end txnlock.Bound) int {
		if x.rangeOf(i).Start().Compare(end) < 0 {
			return -1
		}
		return 1
	})
	for k := hi - 1; k >= 0 && x.maxEnd[k].Compare(r.Start()) > 0; k-- {
		if i := x.order[k]; x.rangeOf(i).Overlaps(r) {
			dst = append(dst, i)
		}
	}
	slices.Sort(dst[n:])
	return dst
}

func holdersOf(held []holding) []waitsfor.Holder {
	hs := make([]waitsfor.Holder, len(held))
	for i, h := range held {
		hs[i] = waitsfor.Holder{Txn: h.txn, Mode: h.mode}
	}
	return hs
}

// unreachedHolders adds to b, w's list, the holders among held (the locks
// that overlap w) that conflict with w and with none of the listed
// requests among cands (indexes of waiters ahead of w): w waits for them
// and no listed request leads to them.
func (s *familySnap) unreachedHolders(b []txnlock.TxnID, w waitSnap, held []holding, cands []int) []txnlock.TxnID {
	n := len(b)
	for _, h := range held {
		if h.txn == w.req.Txn || h.mode.Compatible(w.req.Mode) || !h.r.Overlaps(w.r) || slices.Contains(b[:n], h.txn) {
			continue
		}
		reached := false
		for _, j := range cands {
			o := s.waiters[j]
			if slices.Contains(b[:n], o.req.Txn) && o.req.Txn != h.txn && !h.mode.Compatible(o.req.Mode) && h.r.Overlaps(o.r) {
				reached = true
				break
			}
		}
		if !reached {
			b = append(b, h.txn)
		}
	}
	return sortUnique(b, 0)
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

// Stats returns the manager's counters, summed over the column families
// (and over those dropped so far). CurrentLocks counts held point locks (a
// key with several holders once) and held wide (transaction, range)
// entries. LockMemory is exact.
func (m *Manager) Stats() txnlock.Stats {
	m.admin.Lock() // no column family is dropped meanwhile
	defer m.admin.Unlock()
	s := m.retired
	for _, f := range *m.fams.Load() {
		f.lockStripes()
		f.addCountersLocked(&s)
		s.CurrentLocks += int64(f.tree.Len())
		s.LockMemory += f.treeMemory()
		for i := range f.stripes {
			st := &f.stripes[i]
			s.CurrentLocks += st.held
			s.LockMemory += st.lockMemory()
		}
		f.unlockStripes()
	}
	return s
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
