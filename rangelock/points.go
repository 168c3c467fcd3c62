package rangelock

import (
	"bytes"
	"unsafe"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
)

// Point locks [k, k] do not go through the locktree: a stripe keeps them in
// a hash table (keytable.Table, shared with pointlock) for exact lookups,
// and, only while the family has wide activity, in an ordered index too (a
// B-tree, for the range scans of wide requests and escalation; see
// family.orderPointsLocked). Each transaction has a list of its pointLocks
// per stripe (a txnPoints, found through the transaction table) so that
// releasing all of them costs what it holds. A locktree segment costs a
// general rewrite; a point needs none of it, and engines take mostly point
// locks.

// pointLock is a held point lock: its key and its holders (one, or several
// Shared). Guarded by its stripe's mutex.
type pointLock struct {
	keytable.Entry        // the key, owned; first, as keytable.Table requires
	h              uint64 // the key's hash, its place in the table
	// The holders in grant order: the first embedded (first.txn is 0
	// when there is none), the others (several Shared) in *more, which
	// is allocated on the first second holder and kept for reuse.
	first pointHold
	more  *[]pointHold
	// nextFree links the pointLock in its stripe's free list while it is
	// recycled (no holder, not in the table).
	nextFree *pointLock
}

// nHolders returns the number of holders of pl.
func (pl *pointLock) nHolders() int {
	switch {
	case pl.first.txn == 0:
		return 0
	case pl.more == nil:
		return 1
	}
	return 1 + len(*pl.more)
}

// holder returns holder i of pl, 0 <= i < nHolders().
func (pl *pointLock) holder(i int) *pointHold {
	if i == 0 {
		return &pl.first
	}
	return &(*pl.more)[i-1]
}

// appendHolder adds h as the last holder of pl.
func (pl *pointLock) appendHolder(h pointHold) {
	if pl.first.txn == 0 {
		pl.first = h
		return
	}
	if pl.more == nil {
		pl.more = new([]pointHold)
	}
	*pl.more = append(*pl.more, h)
}

// removeHolder removes holder i of pl, keeping the others in order.
func (pl *pointLock) removeHolder(i int) {
	if i == 0 {
		if pl.more == nil || len(*pl.more) == 0 {
			pl.first = pointHold{}
			return
		}
		pl.first = (*pl.more)[0]
		i = 1
	}
	m := *pl.more
	copy(m[i-1:], m[i:])
	m[len(m)-1] = pointHold{}
	*pl.more = m[:len(m)-1]
}

// key returns the key as bytes over the lock's own buffer: valid, and not
// to be modified, while the lock is held (copy it to keep it).
func (pl *pointLock) key() []byte { return pl.KeyBytes() }

// pointHold is one holder of a pointLock. slot is the lock's index in
// tp.locks, the holder's list in the stripe.
type pointHold struct {
	txn  txnlock.TxnID
	tp   *txnPoints
	slot int32
	mode txnlock.Mode
}

// txnPoints lists a transaction's pointLocks in one stripe (unordered).
// The transaction table owns it; the stripe's mutex guards locks.
type txnPoints struct {
	locks []*pointLock
}

func pointLess(a, b *pointLock) bool { return a.Key() < b.Key() }

// Memory of point locks, counted like the locktree counts its segments.
var (
	pointLockBytes = int64(unsafe.Sizeof(pointLock{})) + 24 // + table slots (16 bytes at a load of about 2/3)
	holdBytes      = int64(unsafe.Sizeof(pointHold{})) + 8  // + slot in txnPoints.locks
)

func keyBytes(n int) int64 { return (int64(n) + 7) &^ 7 }

// maxFreePoints bounds a stripe's free list of pointLocks.
const maxFreePoints = 32

// pointGetLocked returns the pointLock of key (hash h), or nil.
func (s *stripe) pointGetLocked(h uint64, key []byte) *pointLock {
	pl, _ := s.points.Find(h, key)
	return pl
}

// holderIndex returns the index of txn among pl's holders, or -1.
func (pl *pointLock) holderIndex(txn txnlock.TxnID) int {
	if pl.first.txn == txn {
		return 0 // txn is valid, never 0
	}
	if pl.more != nil {
		for i := range *pl.more {
			if (*pl.more)[i].txn == txn {
				return i + 1
			}
		}
	}
	return -1
}

// modeOf returns txn's mode on pl (0: none).
func (pl *pointLock) modeOf(txn txnlock.TxnID) txnlock.Mode {
	if pl == nil {
		return 0
	}
	if i := pl.holderIndex(txn); i >= 0 {
		return pl.holder(i).mode
	}
	return 0
}

// conflicts calls fn for each holder of pl other than txn whose mode is
// incompatible with mode.
func (pl *pointLock) conflicts(txn txnlock.TxnID, mode txnlock.Mode, fn func(owner txnlock.TxnID)) {
	for i := range pl.nHolders() {
		if h := pl.holder(i); h.txn != txn && !mode.Compatible(h.mode) {
			fn(h.txn)
		}
	}
}

// hasConflictOrNil reports whether conflicts would call fn (false for a
// nil pl).
func (pl *pointLock) hasConflictOrNil(txn txnlock.TxnID, mode txnlock.Mode) bool {
	if pl == nil {
		return false
	}
	for i := range pl.nHolders() {
		if h := pl.holder(i); h.txn != txn && !mode.Compatible(h.mode) {
			return true
		}
	}
	return false
}

// ascendPointsLocked calls fn for every pointLock of s with its key in r
// until fn returns false: in key order through the ordered index if s has
// one, else (a status or a caller that does not need the order) by a scan
// of the table. fn must not change s.points.
func (s *stripe) ascendPointsLocked(r txnlock.Range, fn func(pl *pointLock) bool) {
	if s.points.Len() == 0 {
		return
	}
	if s.ordered == nil {
		s.points.All(func(_ uint64, pl *pointLock) bool {
			return !r.Contains(pl.key()) || fn(pl)
		})
		return
	}
	start := r.Start().Key()
	s.probe.SetProbe(unsafe.String(unsafe.SliceData(start), len(start)))
	s.ordered.AscendGreaterOrEqual(&s.probe, func(pl *pointLock) bool {
		if txnlock.Point(pl.key()).Start().Compare(r.End()) >= 0 {
			return false
		}
		if !r.Contains(pl.key()) {
			return true
		}
		return fn(pl)
	})
	s.probe.SetProbe("")
}

// buildOrderedLocked builds the ordered index of s's points.
func (s *stripe) buildOrderedLocked() {
	s.ordered = btree.NewG(16, pointLess)
	s.points.All(func(_ uint64, pl *pointLock) bool {
		s.ordered.ReplaceOrInsert(pl)
		return true
	})
}

// acquirePointLocked records that txn, whose list in s is tp, holds key
// (hash h) in mode (the stronger mode wins if it holds key already).
func (s *stripe) acquirePointLocked(txn txnlock.TxnID, tp *txnPoints, h uint64, key []byte, mode txnlock.Mode) {
	pl, pos := s.points.Find(h, key)
	if pl == nil {
		pl = s.newPointLockLocked(h, key)
		s.insertPointLocked(pos, pl)
	} else if i := pl.holderIndex(txn); i >= 0 {
		pl.holder(i).mode = pl.holder(i).mode.Max(mode)
		return
	}
	s.addHoldLocked(pl, txn, tp, mode)
}

// insertFreshAtLocked records that txn holds key (hash h), which nobody
// holds, in mode; pos is where s.points.Find said the key would go, with
// no change to the table since.
func (s *stripe) insertFreshAtLocked(pos int, txn txnlock.TxnID, tp *txnPoints, h uint64, key []byte, mode txnlock.Mode) {
	pl := s.newPointLockLocked(h, key)
	s.insertPointLocked(pos, pl)
	s.addHoldLocked(pl, txn, tp, mode)
}

// insertPointLocked puts pl in the table at pos (from Find) and in the
// ordered index if s keeps one.
func (s *stripe) insertPointLocked(pos int, pl *pointLock) {
	s.points.InsertAt(pos, pl.h, pl)
	if s.ordered != nil {
		s.ordered.ReplaceOrInsert(pl)
	}
}

// addHoldLocked adds txn, whose list in s is tp, as a holder of pl (which
// it does not hold).
func (s *stripe) addHoldLocked(pl *pointLock, txn txnlock.TxnID, tp *txnPoints, mode txnlock.Mode) {
	pl.appendHolder(pointHold{txn: txn, tp: tp, slot: int32(len(tp.locks)), mode: mode})
	tp.locks = append(tp.locks, pl)
	s.pointMem += holdBytes
}

// txnPointsLocked returns txn's list of point locks in s, registering it
// in the transaction table on first use (the lock order allows the table
// under a stripe).
func (s *stripe) txnPointsLocked(txn txnlock.TxnID) *txnPoints {
	sp := s.lastSP
	if s.lastTxn != txn || sp == nil {
		sp = s.f.m.txns.pointsOf(txn, s.f, int(s.idx))
		s.lastTxn, s.lastSP = txn, sp
	}
	return &sp.list
}

// forgetTxnLocked clears the cache of txnPointsLocked for txn (UnlockAll).
func (s *stripe) forgetTxnLocked(txn txnlock.TxnID) {
	if s.lastTxn == txn {
		s.lastTxn, s.lastSP = 0, nil
	}
}

// newPointLockLocked returns an empty pointLock holding a copy of key
// (hash h), from the free list if it can.
func (s *stripe) newPointLockLocked(h uint64, key []byte) *pointLock {
	pl := keytable.TakeFree(&s.free, func(pl *pointLock) **pointLock { return &pl.nextFree }, len(key))
	if pl == nil {
		pl = &pointLock{}
	} else {
		s.nFree--
	}
	pl.SetKey(key)
	pl.h = h // first is empty, *more too: recycled only without holders
	s.pointMem += pointLockBytes + keyBytes(len(key))
	return pl
}

// releasePointLocked removes txn from the holders of key (hash h). It
// reports whether txn held key.
func (s *stripe) releasePointLocked(txn txnlock.TxnID, h uint64, key []byte) bool {
	pl := s.pointGetLocked(h, key)
	if pl == nil {
		return false
	}
	i := pl.holderIndex(txn)
	if i < 0 {
		return false
	}
	s.dropHoldLocked(pl, i)
	return true
}

// dropHoldLocked removes holder i of pl, and pl itself once it has no
// holder left (pl must not be used after that). The transaction's
// txnPoints stays, possibly empty, until releaseAllPointsLocked.
func (s *stripe) dropHoldLocked(pl *pointLock, i int) {
	if s.unlinkHoldLocked(pl, i) {
		s.removePointLocked(pl)
	}
}

// removePointLocked takes pl, which has no holder left, out of s and
// keeps it for reuse (pl must not be used after that).
func (s *stripe) removePointLocked(pl *pointLock) {
	s.points.Remove(pl.h, pl)
	if s.ordered != nil {
		s.ordered.Delete(pl)
	}
	s.freePointLockLocked(pl)
}

// unlinkHoldLocked removes holder i of pl from pl and from its
// transaction's list, and reports whether pl has no holder left.
func (s *stripe) unlinkHoldLocked(pl *pointLock, i int) bool {
	h := *pl.holder(i)
	tp := h.tp
	last := int32(len(tp.locks) - 1)
	if h.slot != last {
		moved := tp.locks[last]
		tp.locks[h.slot] = moved
		moved.holder(moved.holderIndex(h.txn)).slot = h.slot
	}
	tp.locks[last] = nil
	tp.locks = tp.locks[:last]
	s.pointMem -= holdBytes
	pl.removeHolder(i)
	return pl.first.txn == 0
}

// freePointLockLocked takes pl, no longer in s.points, out of the memory
// count and keeps it for reuse.
func (s *stripe) freePointLockLocked(pl *pointLock) {
	s.pointMem -= pointLockBytes + keyBytes(len(pl.Key()))
	if s.nFree < maxFreePoints && len(pl.Key()) <= 64 {
		pl.nextFree, s.free = s.free, pl
		s.nFree++
	}
}

// releaseAllPointsLocked releases every point lock of txn in s (sp is its
// entry for s) and empties its list. If rel is not nil,
// it appends the released keys (as [k, k] ranges over copies). If kqs is
// not nil, it appends to it the queues of the released keys that have
// waiters. It returns how many it released, and kqs.
func (s *stripe) releaseAllPointsLocked(txn txnlock.TxnID, sp *stripePoints, rel *[]txnlock.Range, kqs []*keyQueue) (int, []*keyQueue) {
	s.forgetTxnLocked(txn)
	tp := &sp.list
	n := len(tp.locks)
	for i, pl := range tp.locks {
		tp.locks[i] = nil
		if rel != nil {
			*rel = append(*rel, txnlock.Point(bytes.Clone(pl.key())))
		}
		if kqs != nil {
			if kq := s.queueFor(pl.h, pl.key()); kq != nil {
				kqs = append(kqs, kq)
			}
		}
		// The whole list goes: no slot to keep up to date.
		pl.removeHolder(pl.holderIndex(txn))
		if pl.first.txn == 0 {
			s.removePointLocked(pl)
		}
	}
	tp.locks = tp.locks[:0]
	s.pointMem -= int64(n) * holdBytes
	return n, kqs
}

// resetPointsLocked forgets every point lock of s (Close).
func (s *stripe) resetPointsLocked() {
	s.points.Reset()
	s.ordered = nil
	s.free, s.nFree = nil, 0
	s.lastTxn, s.lastSP = 0, nil
	s.pointMem = 0
}

// releasePointsInLocked releases txn's point locks in s (tp is its list
// there) with keys in r (after escalation covered them with a wide lock).
func (s *stripe) releasePointsInLocked(txn txnlock.TxnID, tp *txnPoints, r txnlock.Range) {
	var in []*pointLock
	for _, pl := range tp.locks {
		if r.Contains(pl.key()) {
			in = append(in, pl)
		}
	}
	for _, pl := range in {
		s.dropHoldLocked(pl, pl.holderIndex(txn))
	}
}
