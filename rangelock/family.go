package rangelock

import (
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/locktree"
)

// family is one column family: its stripes and its wide waiters.
type family struct {
	id      txnlock.ColumnFamily
	m       *Manager
	stripes []stripe

	// wide is the FIFO list of waiting wide requests. It is modified only
	// with every stripe mutex held, so any one stripe mutex suffices to
	// read it.
	wide lockwait.Queue
	// wideIdx indexes the waiters of wide by range; changed with wide.
	wideIdx wideIndex
	// The fields below are written with every stripe mutex held and read
	// with any one.
	wideCounters lockwait.Counters // waits of wide requests
	escalations  uint64
	// wideSeen is set once any wide lock was granted in the family; until
	// then a point release never looks for wide copies.
	wideSeen bool
	// dead is ErrUnknownColumnFamily once dropped, ErrClosed once closed.
	dead error

	// seq orders waiters across stripes: a waiter takes the next value
	// under the lock(s) that link it, so seq order is queue order.
	seq atomic.Uint64
}

// stripe is one slice of a family: the point locks that hash to it, a copy
// of every wide lock, and the point requests waiting in it.
type stripe struct {
	stripeState
	_ [(64 - unsafe.Sizeof(stripeState{})%64) % 64]byte
}

// stripeState is a stripe without the padding that makes its size a
// multiple of a cache line (a stripe's lines are its own).
//
// The first three cache lines hold what a point request that needs no
// queue touches (lockPointFast, a point Unlock, UnlockAll's visit); they
// move between cores with the mutex. The rest is for waits and wide
// requests.
type stripeState struct {
	// mu guards every other field of the stripe but f and idx.
	mu    latch.Mutex
	idx   int32   // the stripe's index in f.stripes; immutable
	nFree int32   // the length of free
	f     *family // immutable
	// lastTxn's entry for this stripe is lastSP: a transaction that
	// locks here again skips the transaction table. UnlockAll of
	// lastTxn clears it.
	lastTxn txnlock.TxnID
	lastSP  *stripePoints
	// free lists recycled pointLocks, linked through nextFree.
	free     *pointLock
	pointMem int64 // bytes accounted for points
	// memReported is the part of lockMemory() already added to the
	// manager's memBudget.
	memReported int64

	// points are the point locks of keys that hash to the stripe (see
	// points.go), by key hash.
	points keytable.Table[pointLock]
	// tree holds a copy of every wide lock of the family: the trees of
	// all stripes have the same content.
	tree *locktree.Tree
	// waitMask has bit i set while waitCount[i] > 0 (see waitBits): a
	// clear bit tells queueFor that a key has no queue without a search
	// of the B-tree, which a stripe with a few waiting keys would
	// otherwise pay on every lock and release.
	waitMask uint64
	// counters counts the point requests of the stripe.
	counters lockwait.Counters

	// ordered indexes points by key while the family has wide activity
	// (family.orderPointsLocked); nil otherwise. It is set and dropped
	// with every stripe held, so one stripe mutex suffices to read
	// whether it is there.
	ordered *btree.BTreeG[*pointLock]
	probe   pointLock // search key for ordered
	// waiting indexes the queues of point waiters by key; nil until the
	// first waiter.
	waiting *btree.BTreeG[*keyQueue]
	kqProbe keyQueue // search key of queueFor
	// waitCount counts the queues in waiting by six bits of their key's
	// hash (waitBits).
	waitCount [64]uint32
}

// keyQueue is the FIFO queue of the point requests waiting on one key.
// Guarded by its stripe's mutex.
type keyQueue struct {
	key []byte
	h   uint64 // keytable hash of key
	q   lockwait.Queue
	// res is the detector resource shared by the queue's waiters that
	// have no wide waiter ahead (waiter.shared); holders is what the
	// detector was last told it waits for: every holder of key. 0 and
	// nil until such a waiter, or without a detector (see sharedwait.go).
	res     txnlock.ResourceID
	holders []txnlock.TxnID
	// own counts the queue's waiters with a resource of their own.
	own int
}

func keyQueueLess(a, b *keyQueue) bool { return string(a.key) < string(b.key) }

func newFamily(m *Manager, cf txnlock.ColumnFamily) *family {
	f := &family{id: cf, m: m, stripes: make([]stripe, m.opts.Stripes)}
	for i := range f.stripes {
		s := &f.stripes[i]
		s.f, s.idx = f, int32(i)
		s.tree = locktree.New()
	}
	return f
}

// lockStripes takes every stripe mutex in ascending order (the lock order).
func (f *family) lockStripes() {
	for i := range f.stripes {
		f.stripes[i].mu.Lock()
	}
}

// unlockStripes releases what lockStripes took, first dropping the
// ordered indexes of points if the family no longer needs them.
func (f *family) unlockStripes() {
	if f.stripes[0].ordered != nil && !f.wideActiveLocked() {
		for i := range f.stripes {
			f.stripes[i].ordered = nil
		}
	}
	for i := range f.stripes {
		f.stripes[i].mu.Unlock()
	}
}

// wideActiveLocked reports whether the family has wide activity: a wide
// lock held (the locktrees are not empty) or a wide request waiting. Both
// change only with every stripe held, so any one stripe suffices to read
// it. While it holds, every stripe keeps an ordered index of its points.
func (f *family) wideActiveLocked() bool {
	return f.wide.Len() > 0 || f.stripes[0].tree.Len() > 0
}

// orderPointsLocked builds each stripe's ordered index of points, if it
// is not there: wide requests and escalation call it before they scan
// points by range. unlockStripes drops the indexes again once the family
// has no wide activity left, so a points-only workload never touches a
// B-tree of points. Every stripe is held.
func (f *family) orderPointsLocked() {
	if f.stripes[0].ordered != nil {
		return
	}
	for i := range f.stripes {
		f.stripes[i].buildOrderedLocked()
	}
}

// waitBits picks the six bits of a key's hash that waitCount counts:
// bits the stripe index (the low bits) and the key table (the high bits)
// do not use.
func waitBits(h uint64) int { return int(h>>32) & 63 }

// queueFor returns the queue of point waiters on key (hash h) in s, or nil.
func (s *stripe) queueFor(h uint64, key []byte) *keyQueue {
	if s.waitMask&(1<<waitBits(h)) == 0 {
		return nil
	}
	s.kqProbe.key = key
	kq, _ := s.waiting.Get(&s.kqProbe)
	s.kqProbe.key = nil
	return kq
}

// queueForInsert returns the queue of point waiters on key (hash h) in s,
// creating it if needed. key must not be modified later.
func (s *stripe) queueForInsert(h uint64, key []byte) *keyQueue {
	if s.waiting == nil {
		s.waiting = btree.NewG(8, keyQueueLess)
	}
	if kq := s.queueFor(h, key); kq != nil {
		return kq
	}
	kq := &keyQueue{key: key, h: h}
	s.waiting.ReplaceOrInsert(kq)
	b := waitBits(h)
	s.waitCount[b]++
	s.waitMask |= 1 << b
	return kq
}

// deleteQueueLocked removes kq, now empty, from s's index.
func (s *stripe) deleteQueueLocked(kq *keyQueue) {
	s.waiting.Delete(kq)
	b := waitBits(kq.h)
	if s.waitCount[b]--; s.waitCount[b] == 0 {
		s.waitMask &^= 1 << b
	}
}

// ascendWaitingLocked calls fn for the queue of every waiting key of s in
// r, in key order, until fn returns false. fn must not change s.waiting.
func (s *stripe) ascendWaitingLocked(r txnlock.Range, fn func(kq *keyQueue) bool) {
	if s.waiting == nil || s.waiting.Len() == 0 {
		return
	}
	// A probe of its own: fn may call queueFor, which uses s.kqProbe.
	s.waiting.AscendGreaterOrEqual(&keyQueue{key: r.Start().Key()}, func(kq *keyQueue) bool {
		if txnlock.Point(kq.key).Start().Compare(r.End()) >= 0 {
			return false
		}
		if !r.Contains(kq.key) {
			return true
		}
		return fn(kq)
	})
}

// inUseLocked reports whether any lock is held or requested in f.
func (f *family) inUseLocked() bool {
	if f.wide.Len() > 0 {
		return true
	}
	for i := range f.stripes {
		s := &f.stripes[i]
		if s.tree.Len() > 0 || s.points.Len() > 0 || (s.waiting != nil && s.waiting.Len() > 0) {
			return true
		}
	}
	return false
}

// close fails every waiter with ErrClosed and drops every lock. The
// waiters unlink themselves when they wake.
func (f *family) close() {
	f.lockStripes()
	defer f.unlockStripes()
	f.dead = txnlock.ErrClosed
	f.forEachWaiterLocked(func(w *waiter) {
		w.lw.Fail(txnlock.ErrClosed)
	})
	for i := range f.stripes {
		f.stripes[i].tree = locktree.New()
		f.stripes[i].resetPointsLocked()
	}
	f.resetMemLocked()
}

// forEachWaiterLocked calls fn for every linked waiter of f: point waiters
// stripe by stripe in key order, then wide waiters. Every stripe is held.
func (f *family) forEachWaiterLocked(fn func(w *waiter)) {
	for i := range f.stripes {
		s := &f.stripes[i]
		if s.waiting == nil {
			continue
		}
		s.waiting.Ascend(func(kq *keyQueue) bool {
			for lw := kq.q.Front(); lw != nil; lw = lw.Next() {
				fn(waiterOf(lw))
			}
			return true
		})
	}
	for lw := f.wide.Front(); lw != nil; lw = lw.Next() {
		fn(waiterOf(lw))
	}
}
