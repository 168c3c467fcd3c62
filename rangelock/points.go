package rangelock

import (
	"bytes"
	"unsafe"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// Point locks [k, k] do not go through the locktree: a stripe keeps the
// lock of each of its keys, held or waited for, as a locktable.Lock (its
// holders and its queue of point requests; internal/locktable states the
// rules, as for pointlock) in a locktable.Table for exact lookups, and,
// only while the family has wide activity, in an ordered index too (a
// B-tree, for the range scans of wide requests and escalation; see
// family.orderPointsLocked). Each transaction has a locktable.Holds per
// stripe (in its stripePoints, found through the transaction table) so
// that releasing all of its points costs what it holds. A locktree
// segment costs a general rewrite; a point needs none of it, and engines
// take mostly point locks.

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
	if s.ordered != nil {
		s.ordered.ReplaceOrInsert(l)
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
	if s.ordered != nil {
		s.ordered.Delete(l)
	}
	s.points.Delete(h, l)
}

// grantPointLocked makes holds' transaction hold l in mode (or raises its
// mode), and counts the key and the hold: at once (lw nil) after l.Decide
// said Grant, or for lw, a waiter of l that Grants yielded and whose Claim
// succeeded (locktable.Lock.GrantWaiter).
func (s *stripe) grantPointLocked(l *locktable.Lock, holds *locktable.Holds, mode txnlock.Mode, lw *lockwait.Waiter) {
	if !l.Held() {
		s.held++
		s.pointMem += pointLockBytes + keyBytes(len(l.Key()))
	}
	n := holds.Len()
	if lw != nil {
		l.GrantWaiter(lw, holds, 0)
	} else {
		l.Grant(holds, mode, 0)
	}
	if holds.Len() > n {
		s.pointMem += holdBytes
	}
}

// releaseHoldLocked removes txn's hold on l (locktable.Lock.Release),
// from l and from txn's Holds in s, and reports whether txn held l. It
// grants nothing and keeps l: the caller re-checks l's queue and drops l
// if it is empty.
func (s *stripe) releaseHoldLocked(l *locktable.Lock, txn txnlock.TxnID) bool {
	if !l.Release(txn) {
		return false
	}
	s.releasedLocked(l)
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

// ascendPointsLocked calls fn for every Lock of s (held, or only waited
// for) with its key in r until fn returns false: in key order through the
// ordered index if s has one, else (a status or a caller that does not
// need the order) by a scan of the table. fn must not change s.points.
func (s *stripe) ascendPointsLocked(r txnlock.Range, fn func(l *locktable.Lock) bool) {
	if s.points.Len() == 0 {
		return
	}
	if s.ordered == nil {
		s.points.All(func(_ uint64, l *locktable.Lock) bool {
			return !r.Contains(l.KeyBytes()) || fn(l)
		})
		return
	}
	start := r.Start().Key()
	s.probe.SetProbe(unsafe.String(unsafe.SliceData(start), len(start)))
	s.ordered.AscendGreaterOrEqual(&s.probe, func(l *locktable.Lock) bool {
		if txnlock.Point(l.KeyBytes()).Start().Compare(r.End()) >= 0 {
			return false
		}
		if !r.Contains(l.KeyBytes()) {
			return true
		}
		return fn(l)
	})
	s.probe.SetProbe("")
}

// queuedLocked is ascendPointsLocked for the Locks with queued waiters.
func (s *stripe) queuedLocked(r txnlock.Range, fn func(l *locktable.Lock) bool) {
	s.ascendPointsLocked(r, func(l *locktable.Lock) bool { return l.Queued() == 0 || fn(l) })
}

// buildOrderedLocked builds the ordered index of s's Locks.
func (s *stripe) buildOrderedLocked() {
	s.ordered = btree.NewG(16, lockLess)
	s.points.All(func(_ uint64, l *locktable.Lock) bool {
		s.ordered.ReplaceOrInsert(l)
		return true
	})
}

// txnPointsLocked returns txn's Holds in s, registering it in the
// transaction table on first use (the lock order allows the table under
// a stripe).
func (s *stripe) txnPointsLocked(txn txnlock.TxnID) *locktable.Holds {
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

// resetPointsLocked forgets every point lock of s (Close).
func (s *stripe) resetPointsLocked() {
	s.points.Reset()
	s.ordered = nil
	s.lastTxn, s.lastSP = 0, nil
	s.held, s.pointMem = 0, 0
}

// releasePointsInLocked releases txn's point locks in s (holds is its
// Holds there) with keys in r, after escalation covered them with a wide
// lock of txn: no waiter can be granted by it.
func (s *stripe) releasePointsInLocked(txn txnlock.TxnID, holds *locktable.Holds, r txnlock.Range) {
	var in []*locktable.Lock
	holds.All(func(hd *locktable.Holder) bool {
		if l := hd.Lock(); r.Contains(l.KeyBytes()) {
			in = append(in, l)
		}
		return true
	})
	for _, l := range in {
		s.releaseHoldLocked(l, txn)
		s.dropIfEmptyLocked(l)
	}
}
