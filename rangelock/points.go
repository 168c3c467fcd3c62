package rangelock

import (
	"iter"
	"slices"
	"strings"
	"unsafe"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// Point locks [k, k] do not go through the locktree: a stripe keeps the
// lock of each of its keys, held or waited for, as a locktable.Lock (its
// holders and its queue of point requests; internal/locktable states the
// rules, as for pointlock) in a locktable.Table for exact lookups, and,
// only while the family is fused, in its ordered index too (a B-tree of
// every stripe's Locks, for the range scans of wide requests and
// escalation; see family.orderPointsLocked). Each transaction's record
// (internal/shell) lists its holds, so that releasing all of its points
// costs what it holds. A locktree
// segment costs a general rewrite; a point needs none of it, and engines
// take mostly point locks. One hash of the key picks both its stripe and
// its slot in the stripe's table (hashKey).
//
// The second half of the file is the point queue: what a point request
// waits for, the re-check and grants of point waiters, and the holders of
// a key, which the detector asks for (keyHoldersLocked).

// hashKey returns the hash of point key k (its place in a stripe's table,
// from the high bits) and its stripe (from the low bits; with the test
// option fixedHash, from stripeOf, the same in every run). One hash per
// request serves both.
func (m *Manager) hashKey(k []byte) (uint64, int) { return hashKey(m, k) }

// hashKeyString is hashKey of a key held as a string (Records.Next).
func (m *Manager) hashKeyString(k string) (uint64, int) { return hashKey(m, k) }

func hashKey[K string | []byte](m *Manager, k K) (uint64, int) {
	h := keytable.Sum(&m.kh, k)
	if m.opts.fixedHash {
		return h, stripeOf(m, k)
	}
	return h, int(h & m.mask)
}

// keyHash returns the hash of point key k, its place in its stripe's
// table.
func (m *Manager) keyHash(k []byte) uint64 { return keytable.Sum(&m.kh, k) }

// stripeOf returns the stripe index of point key k: a seeded
// multiply-xor hash over 8-byte words, enough to spread keys over a few
// hundred stripes (a stripe collision costs contention, never
// correctness, so it need not resist chosen keys the way a map hash
// does).
func stripeOf[K string | []byte](m *Manager, k K) int {
	h := m.seed ^ uint64(len(k))*0x9e3779b97f4a7c15
	for len(k) >= 8 {
		h = (h ^ le64(k)) * 0xff51afd7ed558ccd
		h ^= h >> 32
		k = k[8:]
	}
	if len(k) > 0 {
		var tail uint64
		for i := range len(k) {
			tail |= uint64(k[i]) << (8 * i)
		}
		h = (h ^ tail) * 0xc4ceb9fe1a85ec53
	}
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	h ^= h >> 32
	return int(h & m.mask)
}

// le64 reads the first 8 bytes of k, little-endian.
func le64[K string | []byte](k K) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(k[i])
	}
	return v
}

// Memory of point locks, counted like the locktree counts its segments: a
// held key's Lock and its table slot, and each hold.
var (
	pointLockBytes = int64(unsafe.Sizeof(locktable.Lock{})) + 24  // + table slots (16 bytes at a load of about 2/3)
	holdBytes      = int64(unsafe.Sizeof(locktable.Holder{})) + 8 // + its slot in the Holds
)

func keyBytes(n int) int64 { return (int64(n) + 7) &^ 7 }

func lockLess(a, b *locktable.Lock) bool { return a.Key() < b.Key() }

// lockOfLocked returns the Lock of key (hash h), or nil.
func (s *stripe) lockOfLocked(h uint64, key []byte) *locktable.Lock {
	l, _ := s.points.Find(h, key)
	return l
}

// newLockLocked inserts an empty Lock for key (hash h) at pos, where
// s.points.Find said it would go with no change to the table since, and
// in the ordered index if s keeps one.
func (s *stripe) newLockLocked(pos int, h uint64, key []byte) *locktable.Lock {
	l := s.points.New(pos, h, key)
	if o := s.f.ordered; o != nil {
		o.ReplaceOrInsert(l)
	}
	return l
}

// lockForLocked returns the Lock of key (hash h), making it if needed.
func (s *stripe) lockForLocked(h uint64, key []byte) *locktable.Lock {
	l, pos := s.points.Find(h, key)
	if l == nil {
		l = s.newLockLocked(pos, h, key)
	}
	return l
}

// dropIfEmptyLocked takes l out of s (the table recycles it) once nobody
// holds or waits for it; l must not be used after that. It rehashes the
// key (a Lock does not keep its hash): a caller that has the hash calls
// dropLocked.
func (s *stripe) dropIfEmptyLocked(l *locktable.Lock) {
	if l.Empty() {
		s.dropLocked(s.f.m.keyHash(l.KeyBytes()), l)
	}
}

// dropLocked takes l, which is Empty and under hash h, out of s.
func (s *stripe) dropLocked(h uint64, l *locktable.Lock) {
	if o := s.f.ordered; o != nil {
		o.Delete(l)
	}
	s.points.Delete(h, l)
}

// grantPointLocked makes txn hold l in mode (or raises its mode), in l
// and in txn's record, and counts the key and the hold: at once (lw nil)
// after l.Decide said Grant, or for lw, a waiter of l that Grants yielded
// and whose Claim succeeded (locktable.Lock.GrantWaiter).
func (s *stripe) grantPointLocked(l *locktable.Lock, txn txnlock.TxnID, mode txnlock.Mode, lw *lockwait.Waiter) {
	if !l.Held() {
		s.held++
		s.pointMem += pointLockBytes + keyBytes(len(l.Key()))
	}
	if l.ModeOf(txn) == 0 {
		s.pointMem += holdBytes
	}
	if lw != nil {
		s.f.m.sh.Txns.GrantWaiter(l, lw, s.f.idx)
	} else {
		s.f.m.sh.Txns.Grant(l, txn, mode, s.f.idx)
	}
	s.f.pointChangedLocked(l, txn)
}

// releaseHoldLocked removes txn's hold on l (locktable.Lock.Release),
// from l and from txn's Holds in s, and reports whether txn held l. It
// grants nothing and keeps l: the caller re-checks l's queue and drops l
// if it is empty.
func (s *stripe) releaseHoldLocked(l *locktable.Lock, txn txnlock.TxnID) bool {
	if !s.f.m.sh.Txns.Release(l, txn) {
		return false
	}
	s.releasedLocked(l)
	s.f.pointChangedLocked(l, txn)
	return true
}

// releasedLocked counts the release of one hold on l.
func (s *stripe) releasedLocked(l *locktable.Lock) {
	s.pointMem -= holdBytes
	if !l.Held() {
		s.held--
		s.pointMem -= pointLockBytes + keyBytes(len(l.Key()))
	}
}

// ascendPointsLocked calls fn for every Lock of f (held, or only waited
// for) with its key in r until fn returns false: in key order through the
// ordered index if f has one, else (a caller that does not need the
// order) by a scan of every stripe's table. fn must not change the
// tables. Every stripe is held.
func (f *family) ascendPointsLocked(r txnlock.Range, fn func(l *locktable.Lock) bool) {
	if f.ordered == nil {
		for i := range f.stripes {
			more := true
			f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
				more = !r.Contains(l.KeyBytes()) || fn(l)
				return more
			})
			if !more {
				return
			}
		}
		return
	}
	start := r.Start().Key()
	f.probe.SetProbe(unsafe.String(unsafe.SliceData(start), len(start)))
	f.ordered.AscendGreaterOrEqual(&f.probe, func(l *locktable.Lock) bool {
		if txnlock.Point(l.KeyBytes()).Start().Compare(r.End()) >= 0 {
			return false
		}
		if !r.Contains(l.KeyBytes()) {
			return true
		}
		return fn(l)
	})
	f.probe.SetProbe("")
}

// queuedLocked is ascendPointsLocked for the Locks with queued waiters.
func (f *family) queuedLocked(r txnlock.Range, fn func(l *locktable.Lock) bool) {
	f.ascendPointsLocked(r, func(l *locktable.Lock) bool { return l.Queued() == 0 || fn(l) })
}

// resetPointsLocked forgets every point lock of s (Close).
func (s *stripe) resetPointsLocked() {
	s.points.Reset()
	s.held, s.pointMem = 0, 0
}

// pointsOfLocked calls fn for each point lock of txn in f until fn
// returns false. Every stripe is held.
func (f *family) pointsOfLocked(txn txnlock.TxnID, fn func(l *locktable.Lock, mode txnlock.Mode) bool) {
	f.m.sh.Txns.Holds(txn, f.idx, func(hd *locktable.Holder) bool { return fn(hd.Lock(), hd.Mode()) })
}

// releasePointsInLocked releases txn's point locks with keys in r, after
// escalation covered them with a wide lock of txn: no waiter can be
// granted by it. Every stripe is held.
func (f *family) releasePointsInLocked(txn txnlock.TxnID, r txnlock.Range) {
	var in []*locktable.Lock
	f.pointsOfLocked(txn, func(l *locktable.Lock, _ txnlock.Mode) bool {
		if r.Contains(l.KeyBytes()) {
			in = append(in, l)
		}
		return true
	})
	for _, l := range in {
		_, si := f.m.hashKey(l.KeyBytes())
		s := &f.stripes[si]
		s.releaseHoldLocked(l, txn)
		s.dropIfEmptyLocked(l)
	}
}

// The point requests waiting on a key are queued in its locktable.Lock,
// which decides, in queue order, which of them a release lets through
// (Lock.Grants); what the Lock does not know — the wide locks in the
// stripe's locktree and the wide waiters — the stripe tells it.
//
// The deadlock detector asks a point waiter with no overlapping wide
// waiter queued ahead of it (waiter.shared) for its key's holders only:
// point holders and the holders of wide locks over the key
// (keyHoldersLocked). That is exact for deadlock detection by the
// contraction argument of detect.Waiter.Blockers: such a waiter waits for
// the key's holders and for the same-key waiters queued ahead, and those
// wait for nothing but the key's holders (or for same-key waiters ahead of
// them, which wait for the holders), so the queue adds no cycle the
// holders do not close. The answer costs a look at the holders, never a
// walk of the queue, and a grant or release on a hot key costs the
// detector nothing.
//
// A point waiter that finds an overlapping wide waiter queued ahead of it
// (which may wait for other keys' holders) is answered with its own exact
// conflicts (blockersLocked), as wide waiters are (waiter.shared is
// false); wide waiters queued later never get ahead of it, so the choice
// made when it queues stays right.

// pointBlockedLocked reports whether point request q (not yet queued)
// must wait, by its key's Lock l (nil: the key has none) and what l does
// not know: a conflicting wide lock, and, unless q.txn holds the key, a
// conflicting wide request queued earlier. It sets q.upgrade if q.txn
// holds the key Shared, as a point or inside a wide lock, and asks for
// Exclusive: an upgrade waits for the other holders only, never for the
// queue.
func (f *family) pointBlockedLocked(q *request, l *locktable.Lock) bool {
	wideHeld := f.tree.Len() > 0 && f.tree.HasConflict(q.txn, q.r, q.mode)
	var held txnlock.Mode
	if l != nil {
		held = l.ModeOf(q.txn)
	}
	if held == 0 && q.mode == txnlock.Exclusive && f.tree.Len() > 0 && f.tree.Covered(q.txn, q.r, txnlock.Shared) {
		// Held Shared inside a wide lock, which l does not know of.
		q.upgrade = true
		return wideHeld || (l != nil && l.Conflicts(q.txn, q.mode))
	}
	q.upgrade = held != 0 // not covered (coveredLocked): Shared, asking Exclusive
	blocked := wideHeld || (held == 0 && f.wideConflictAheadLocked(q, newRequest))
	if l == nil {
		return blocked
	}
	d, _ := l.Decide(q.txn, q.mode, blocked)
	return d == locktable.Wait
}

// wideConflictAheadLocked reports whether an active wide request of
// another transaction that overlaps point request q and conflicts with it
// was queued before seq, and q does not skip it (queuedAheadLocked): what
// q's Lock does not know of its queue.
func (f *family) wideConflictAheadLocked(q *request, seq uint64) bool {
	if f.wide.Len() == 0 {
		return false
	}
	found := false
	f.wideOverlapping(q.r, seq, func(w *waiter) bool {
		found = w.txn != q.txn && w.lw.Active() && !q.mode.Compatible(w.mode)
		return !found
	})
	if !found {
		return false
	}
	for _, w := range f.queuedAheadLocked(q, seq) {
		if !w.point() && !q.mode.Compatible(w.mode) {
			return true
		}
	}
	return false
}

// recheckQueueLocked re-checks the point waiters of l, after something on
// its key was released or a waiter left: it grants, in queue order, each
// that l's Grants lets through. What keeps a waiter outside l (blocked): a
// conflicting wide lock, and, for a waiter that is not shared (it queued
// behind an overlapping wide waiter) and not an upgrade, a conflicting
// wide waiter queued before it; l.Det().Own counts the waiters that are
// not shared, so a key with neither needs no blocked. The walk stops as
// soon as no later waiter can be granted (a key held Exclusive, by a point
// or a wide lock, stops it at the first blocked waiter), so a waiter that
// leaves a long queue costs O(1), not a scan of it. A closed family grants
// nothing. s is held.
func (f *family) recheckQueueLocked(s *stripe, l *locktable.Lock) {
	if f.dead != nil {
		return
	}
	for lw := range f.pointGrantsLocked(l) {
		if lw.Claim() {
			f.grantPointWaiterLocked(s, l, waiterOf(lw))
		}
	}
}

// pointGrantsLocked yields, in queue order, the point waiters of l that
// can be granted now (locktable.Lock.Grants, told what l does not know).
// l's stripe is held.
func (f *family) pointGrantsLocked(l *locktable.Lock) iter.Seq[*lockwait.Waiter] {
	var blocked func(*lockwait.Waiter) bool
	xOutside := false
	if f.tree.Len() > 0 || (l.Queued() > 0 && l.Det().Own > 0) {
		key := txnlock.Point(l.KeyBytes())
		xOutside = f.tree.Len() > 0 && f.tree.HasConflict(0, key, txnlock.Shared)
		blocked = func(lw *lockwait.Waiter) bool {
			w := waiterOf(lw)
			return (f.tree.Len() > 0 && f.tree.HasConflict(w.txn, key, w.mode)) ||
				(!w.shared && !w.upgrade && f.wideConflictAheadLocked(&w.request, w.seq))
		}
	}
	return l.Grants(blocked, xOutside)
}

// grantPointWaiterLocked grants w, a point waiter of l that Grants
// yielded and whose Claim succeeded: it records the hold (in l and in the
// transaction's Holds), counts it, and wakes w. s is held.
func (f *family) grantPointWaiterLocked(s *stripe, l *locktable.Lock, w *waiter) {
	lw := w.lw
	since := lw.Since
	// The transaction's record may have been taken by an UnlockAll that
	// ran while w waited (a closing engine releases every transaction):
	// register the grant afresh so that the next UnlockAll finds it; the
	// woken waiter may call UnlockAll at once, and it reads the record
	// under the record stripe's lock, not ours.
	s.grantPointLocked(l, w.txn, w.mode, lw)
	s.counters.Acquired++
	s.counters.EndWait(nil, since, f.m.clock.Now())
	s.syncMemLocked(&f.m.mem)
	f.leftQueueLocked(l, w)
	// Touch lw no more after Wake: its goroutine may recycle it at once
	// (lockwait.Waiter.Release).
	lw.Wake()
}

// leftQueueLocked does the bookkeeping of l once point waiter w is out of
// l's queue (granted or gone): l.Det().Own counts w no more if it was not
// shared.
func (f *family) leftQueueLocked(l *locktable.Lock, w *waiter) {
	if !w.shared {
		l.Det().Own--
	}
}

// recheckPointsLocked re-checks the point waiters on keys in rs (ranges
// just released, or the range of a waiter that left), each key once.
// Every stripe is held.
func (f *family) recheckPointsLocked(rs []txnlock.Range) {
	var ls []*locktable.Lock
	for _, r := range rs {
		if k, ok := r.PointKey(); ok {
			// One key: a probe, not a scan.
			h, si := f.m.hashKey(k)
			if l := f.stripes[si].lockOfLocked(h, k); l != nil && l.Queued() > 0 {
				ls = append(ls, l)
			}
			continue
		}
		f.queuedLocked(r, func(l *locktable.Lock) bool {
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
		_, si := f.m.hashKey(l.KeyBytes())
		f.recheckQueueLocked(&f.stripes[si], l) // l keeps a holder or a waiter: it stays
	}
}

// wideWaiterOverlapsLocked reports whether a wide waiter (any: active or
// failed but not yet unlinked) overlaps r. Any stripe is held.
func (f *family) wideWaiterOverlapsLocked(r txnlock.Range) bool {
	found := false
	f.wideOverlapping(r, newRequest, func(*waiter) bool {
		found = true
		return false
	})
	return found
}

// wideWaiterAheadLocked reports whether an active wide waiter queued
// before seq overlaps r: a point request behind one waits for more than
// its key's queue. Any stripe is held.
func (f *family) wideWaiterAheadLocked(r txnlock.Range, seq uint64) bool {
	found := false
	if f.wide.Len() > 0 {
		f.wideOverlapping(r, seq, func(w *waiter) bool {
			found = w.lw.Active()
			return !found
		})
	}
	return found
}

// keyHoldersLocked appends to dst every holder of l's key, in any mode,
// once each, sorted: its point holders and the holders of wide locks over
// it. s is held.
func (s *stripe) keyHoldersLocked(l *locktable.Lock, dst []txnlock.TxnID) []txnlock.TxnID {
	base := len(dst)
	dst = l.AppendHolders(dst)
	if s.f.tree.Len() > 0 {
		// Exclusive conflicts with every mode; txn 0 is nobody.
		s.f.tree.Conflicts(0, txnlock.Point(l.KeyBytes()), txnlock.Exclusive, func(owner txnlock.TxnID, _ txnlock.Range, _ txnlock.Mode) bool {
			dst = append(dst, owner)
			return true
		})
	}
	return sortUnique(dst, base)
}

func sortUnique(dst []txnlock.TxnID, base int) []txnlock.TxnID {
	slices.Sort(dst[base:])
	return append(dst[:base], slices.Compact(dst[base:])...)
}
