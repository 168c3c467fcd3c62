package rangelock

import (
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/waitsfor"
	"github.com/txnlock/txnlock/locktree"
)

// How a family is built. Each column family has S stripes
// (Options.Stripes); a stripe is a latch over the locktable.Locks of the
// keys that hash to it, each with its holders and its queue of point
// requests, as in pointlock. The family keeps its wide locks (any range
// but [k, k]) in one locktree.Tree, its wide waiters in one FIFO list
// indexed by range (locktable.RangeQueue), and, while it has wide activity, one
// ordered index of the Locks of every stripe:
//
//	family (cf 1)
//	┌──────────┬──────────┬──────────┬──────────┐
//	│ stripe 0 │ stripe 1 │ stripe 2 │ stripe 3 │  point [k, k]: in stripe hash(k) % S
//	│ [a] [e]  │ [b]      │ [c] [g]  │ [d]      │
//	└──────────┴──────────┴──────────┴──────────┘
//	wide locks [m, p) ...: one locktree     wide waiters: one FIFO list
//
// Striped and fused. A family with no wide lock held and no wide request
// waiting is striped: a point request takes its stripe's latch alone and
// never touches the locktree (in MyRocks' published range-locking
// benchmark, one tree-wide mutex cost 36% of the throughput at 100
// threads). A family with wide activity is fused: every stripe is guarded
// by stripe 0's latch (lockStripe), so a wide request, a release of a wide
// lock and the detector's question to a wide waiter take one latch and
// look at one locktree and one ordered index. unlockStripes, the end of
// every section that holds every latch (the only sections that change the
// activity), fuses or unfuses the family. fused is read before and after
// a stripe's latch is taken: the second read tells whether it was the
// right latch. The ordered index of points (for the range scans of wide
// requests and escalation) is built when first needed while fused and
// dropped on unfusing, both with every latch held.
//
// A point Lock does not know the wide locks and waiters over its key: the
// family tells it (Decide's and Grants' blocked, points.go). The detector
// asks a waiter whom it waits for (detect.go, blkcache.go); the manager
// tells it of the two events that add a waits-for edge with no new wait:
// a grant past queued requests (Passed) and a request that leaves without
// a grant (Recheck), both after the latches are released.
//
// Lock order:
//
//	the registry's Mu ─▶ stripe latches of one family, in index order
//	                   ─▶ a record stripe's Mu (internal/shell)
//	the Detector's locks ─▶ stripe latches (its questions: detect.go)
//
// Fused, a family's one latch is stripe 0's, the first in that order. The
// manager never calls the detector with a latch held, but for
// detect.Graph.Stamp, which takes no lock.

// family is one column family: its stripes, its wide locks and its wide
// waiters.
type family struct {
	id      txnlock.ColumnFamily
	idx     uint16 // its index in the registry, which its holds keep
	m       *Manager
	stripes []stripe

	// fused is set while the family has wide activity (wideActiveLocked):
	// its stripes then share stripe 0's latch (see Fused stripes in the
	// package doc). It changes only in unlockStripes, with every latch
	// held, so it is stable while any one latch is held.
	fused atomic.Bool

	// The fields below, up to seq, are changed with every stripe latch
	// held (all of them, or stripe 0's while fused) and read with any one.

	// tree holds the family's wide locks.
	tree *locktree.Tree
	// treeReported is the part of tree's memory added to the manager's
	// memBudget.
	treeReported int64
	// wide is the waiting wide requests, FIFO and indexed by range.
	wide locktable.RangeQueue
	// ordered indexes the Locks of every stripe by key while the family
	// is fused (orderPointsLocked); nil otherwise. Set and dropped with
	// every latch held; while fused, stripe 0's latch guards its
	// changes, so point requests keep it current.
	ordered      *btree.BTreeG[*locktable.Lock]
	probe        locktable.Lock    // search key for ordered
	wideCounters lockwait.Counters // waits of wide requests
	escalations  uint64
	// wideSeen is set once any wide lock was granted in the family; until
	// then a point release never looks for wide copies.
	wideSeen bool
	// blkEpoch and the transactions' stamps tell a waiter whether its
	// kept answer to the detector still holds (blkcache.go).
	blkEpoch  uint64
	stamps    map[txnlock.TxnID]uint64
	lastStamp uint64
	// queuedBuf is queuedAheadLocked's scratch: the requests ahead, as
	// internal/waitsfor reads them, used with every latch held.
	queuedBuf []waitsfor.Queued
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
// (held or waited for) and its counters.
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
	// mu guards every other field of the stripe but f and idx; while the
	// family is fused, stripe 0's mu guards them instead (lockStripe).
	mu  latch.Mutex
	idx int32   // the stripe's index in f.stripes; immutable
	f   *family // immutable
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

	// counters counts the point requests of the stripe.
	counters lockwait.Counters
}

func newFamily(m *Manager, cf txnlock.ColumnFamily, idx uint16) *family {
	f := &family{id: cf, idx: idx, m: m, stripes: make([]stripe, m.opts.Stripes), tree: locktree.New()}
	f.src.f = f
	for i := range f.stripes {
		s := &f.stripes[i]
		s.f, s.idx = f, int32(i)
	}
	return f
}

// inUseLocked reports whether any lock is held or requested in f.
func (f *family) inUseLocked() bool {
	if f.wideActiveLocked() {
		return true
	}
	for i := range f.stripes {
		if f.stripes[i].points.Len() > 0 {
			return true
		}
	}
	return false
}

// Close fails every waiter with ErrClosed and drops every lock
// (shell.Family). The waiters unlink themselves when they wake.
func (f *family) Close() {
	f.lockStripes()
	defer f.unlockStripes()
	f.dead = txnlock.ErrClosed
	f.forEachWaiterLocked(func(w *waiter) {
		w.lw.Fail(txnlock.ErrClosed)
	})
	f.tree = locktree.New()
	f.ordered = nil
	for i := range f.stripes {
		f.stripes[i].resetPointsLocked()
	}
	f.resetMemLocked()
}

// wideOverlapping calls fn for every wide waiter queued before seq
// (newRequest: every one) whose range overlaps r, failed ones not yet gone
// included, until fn returns false (locktable.RangeQueue.Overlapping). Any
// stripe is held.
func (f *family) wideOverlapping(r txnlock.Range, seq uint64, fn func(w *waiter) bool) {
	f.wide.Overlapping(r, seq, func(lw *lockwait.Waiter) bool { return fn(waiterOf(lw)) })
}

// forEachWaiterLocked calls fn for every linked waiter of f: point waiters
// stripe by stripe, then wide waiters. Every stripe is held.
func (f *family) forEachWaiterLocked(fn func(w *waiter)) {
	for i := range f.stripes {
		f.stripes[i].points.All(func(_ uint64, l *locktable.Lock) bool {
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
