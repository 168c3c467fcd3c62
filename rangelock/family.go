package rangelock

import (
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
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
	// src answers the detector about f's waiters (detect.go); immutable.
	src detectorSource

	// seq orders waiters across stripes: a waiter takes the next value
	// under the lock(s) that link it, so seq order is the order in which
	// they queued (and queue order, but for point upgrades, which go to
	// the front of their key's queue).
	seq atomic.Uint64
}

// stripe is one slice of a family: the locks of the keys that hash to it
// (held or waited for), a copy of every wide lock, and its counters.
type stripe struct {
	stripeState
	_ [(64 - unsafe.Sizeof(stripeState{})%64) % 64]byte
}

// stripeState is a stripe without the padding that makes its size a
// multiple of a cache line (a stripe's lines are its own).
//
// The first cache lines hold what a point request that needs no queue
// touches (lockPointFast, a point Unlock, UnlockAll's visit); they move
// between cores with the mutex. The rest is for waits and wide requests.
type stripeState struct {
	// mu guards every other field of the stripe but f and idx.
	mu  latch.Mutex
	idx int32   // the stripe's index in f.stripes; immutable
	f   *family // immutable
	// lastTxn's entry for this stripe is lastSP: a transaction that
	// locks here again skips the transaction table. UnlockAll of
	// lastTxn clears it.
	lastTxn txnlock.TxnID
	lastSP  *stripePoints
	// points are the Locks of the keys that hash to the stripe, held or
	// only waited for (see points.go), with their queues of point
	// requests.
	points locktable.Table
	// held counts the Locks of points that have a holder; pointMem is
	// the memory accounted for them and their holds.
	held     int64
	pointMem int64
	// memReported is the part of lockMemory() already added to the
	// manager's memBudget.
	memReported int64

	// tree holds a copy of every wide lock of the family: the trees of
	// all stripes have the same content.
	tree *locktree.Tree
	// counters counts the point requests of the stripe.
	counters lockwait.Counters

	// ordered indexes every Lock of points by key while the family has
	// wide activity (family.orderPointsLocked); nil otherwise. It is set
	// and dropped with every stripe held, so one stripe mutex suffices
	// to read whether it is there.
	ordered *btree.BTreeG[*locktable.Lock]
	probe   locktable.Lock // search key for ordered
}

func newFamily(m *Manager, cf txnlock.ColumnFamily) *family {
	f := &family{id: cf, m: m, stripes: make([]stripe, m.opts.Stripes)}
	f.src.f = f
	for i := range f.stripes {
		s := &f.stripes[i]
		s.f, s.idx = f, int32(i)
		s.tree = locktree.New()
	}
	return f
}

// inUseLocked reports whether any lock is held or requested in f.
func (f *family) inUseLocked() bool {
	if f.wide.Len() > 0 {
		return true
	}
	for i := range f.stripes {
		s := &f.stripes[i]
		if s.tree.Len() > 0 || s.points.Len() > 0 {
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
// stripe by stripe, then wide waiters. Every stripe is held.
func (f *family) forEachWaiterLocked(fn func(w *waiter)) {
	for i := range f.stripes {
		f.stripes[i].queuedLocked(txnlock.All(), func(l *locktable.Lock) bool {
			for lw := l.Front(); lw != nil; lw = lw.Next() {
				fn(waiterOf(lw))
			}
			return true
		})
	}
	for lw := f.wide.Front(); lw != nil; lw = lw.Next() {
		fn(waiterOf(lw))
	}
}
