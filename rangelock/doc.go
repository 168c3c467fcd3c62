// Package rangelock is the range lock manager: it implements
// txnlock.Manager over ranges of keys, so that a transaction that scanned
// [10, 20] for update keeps every other transaction from inserting 15 (the
// phantom). A point lock is the one-key range [k, k] (txnlock.Point), a
// prefix lock a txnlock.Prefix range. For an engine that only ever locks
// single keys, pointlock is faster.
//
//	m, err := rangelock.New(rangelock.Options{}) // zero Options: the defaults
//	if err != nil { ... }
//	defer m.Close()
//	scan, err := txnlock.HalfOpen([]byte("orders/10"), []byte("orders/20")) // [orders/10, orders/20)
//	err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: scan, Mode: txnlock.Shared})
//	row := txnlock.Point([]byte("orders/17")) // [orders/17, orders/17]
//	err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: row, Mode: txnlock.Exclusive})
//	...
//	m.UnlockAll(1) // at commit or rollback
//
// # The life of a request
//
// The rules of one key (who is granted, who waits, in what order, who is
// woken) are internal/locktable's, told once in its package doc; the
// exceptions to FIFO (a holder's request never waits for a queued request
// that waits for its transaction, nor for a wide one of a transaction that
// held nothing in the family when it queued) are the root package's. A point key's lock is
// a locktable.Lock, as in pointlock. A request goes through four files (a
// point request through wide.go only when its family has wide activity):
//
//	lock.go     Lock: validate; grant a point that needs no queue under
//	            its stripe latch alone (lockPointFast), else family.lock:
//	            grant, fail (NoWait) or enqueue, unlatch and Wait; a failed
//	            wait leaves its queue in abandon
//	points.go   a stripe's point keys (its locktable.Table of Locks; the
//	            family's ordered index), their grants and releases; the
//	            point queue: its re-check and grants, a key's holders
//	wide.go     the every-latch sections and the two modes; wide requests:
//	            whom one waits for, the wide waiter list, the re-check and
//	            grant of wide waiters
//	release.go  Unlock, UnlockAll: release, re-check only the waiters that
//	            overlap what was freed, and wake those it grants
//
// rangelock adds what a key's Lock cannot see, the wide locks and the
// wide waiters (see Layout), and tells the Lock of them: a point request
// is blocked (Decide's blocked) by a conflicting wide lock or, unless its
// transaction holds the key, by a conflicting wide request queued
// earlier; a re-check (Grants) is told the same of each waiter, and
// whether a wide lock holds the key Exclusive (xOutside). A wide request
// waits for the conflicting holders in its range and the conflicting
// requests queued ahead, less those it skips: a holder that widens its
// range skips the waiters that wait for it, and a holder's request skips
// the wide waiters of transactions that held nothing in the family when
// they queued (internal/waitsfor.Skipped; request.idle); a point request
// skips such wide waiters only (the requests on its key keep their
// order), and as an upgrade the whole queue. So a request queued between two others need not wait for the one
// ahead of it: whom a waiter waits for counts only the requests that
// surely do (waitsfor.Queued's MaySkip).
//
// # Layout
//
// Each column family has S stripes (Options.Stripes). A stripe is a latch
// over the Locks of the keys that hash to it. The family keeps its wide
// locks in one locktree.Tree, its wide waiters in one FIFO list indexed
// by range (wideindex.go), and, while it has wide activity, one ordered
// index of the Locks of every stripe:
//
//	family (cf 1)
//	┌──────────┬──────────┬──────────┬──────────┐
//	│ stripe 0 │ stripe 1 │ stripe 2 │ stripe 3 │  point [k, k]: in stripe hash(k) % S
//	│ [a] [e]  │ [b]      │ [c] [g]  │ [d]      │
//	└──────────┴──────────┴──────────┴──────────┘
//	wide locks [m, p) ...: one locktree     wide waiters: one FIFO list
//
// # Striped and fused
//
// A family runs in one of two modes. Striped, it has no wide lock and no
// wide waiter: a point request takes its stripe's latch alone and never
// touches the locktree, so point requests on different stripes never
// meet (in MyRocks' published range-locking benchmark, one tree-wide
// mutex cost 36% of the throughput at 100 threads). Fused, it has wide
// activity (a wide lock held or a wide request waiting): every stripe is
// guarded by stripe 0's latch (lockStripe), so a wide request, a release
// of a wide lock and the detector's question to a wide waiter take one
// latch and look at one locktree and one ordered index, where striped
// latches would have them take S latches and search S structures, which
// under contended small ranges is most of the work. A fused family is
// serialized as a PerconaFT locktree is; a family of points only keeps
// its S latches.
//
// The mode follows the activity: unlockStripes, the end of every section
// that holds every latch (lockStripes; "every stripe is held" in a
// function's doc; the only sections that change the activity),
// fuses a family that has wide activity and unfuses one that has none.
// fused is read before and after taking a stripe's latch; it cannot
// change while any latch a request may hold is held, so the second read
// tells whether the latch taken is the right one. A stripe starts with
// what a point request that needs no queue touches and fills whole cache
// lines, so no two stripes share one; such a request allocates nothing
// (the table recycles Locks).
//
// # The lazy ordered index
//
// Wide requests and escalation scan points in key order; point requests
// never do. So the family keeps a B-tree of its Locks only while it is
// fused: built from the stripes' tables when first needed
// (orderPointsLocked), dropped by unlockStripes when the family unfuses,
// both with every latch held, so a point request sees the index whenever
// it holds the latch that guards it.
//
// # Deadlock seam
//
// The detector asks; the manager does not tell (detect.go). A waiter is
// queued with its family's lockwait.Source, and the detector asks it,
// whenever a search needs it, whom the wait is blocked by and whom it
// waits for, answered from the live lock table under the latch(es) of the
// waiter's queue. A point waiter with no overlapping wide waiter ahead is
// blocked by its key's holders, point and wide, as in pointlock: its
// queue is not walked (exact by the contraction argument of
// txnlock.Waiter.Blockers; see points.go). A point waiter behind an
// overlapping wide waiter, and every wide waiter, is answered with its
// nearest blockers by the rule of Status, through which every request it
// waits for is reached, so a search follows a few edges per waiter, not
// one to every request queued ahead. Such a waiter keeps its answer until
// something overlapping it changes (blkcache.go), and when a request it
// named leaves without a grant, it now waits for what that request waited
// for: the manager asks the detector to search from it
// (txnlock.WaitGraph.Recheck, once the latch is released). Grants and
// releases cost the detector nothing, but for a request granted at once
// past queued requests that conflict with it (Passed, once the latch is
// released); Block and Unblock run in lockwait.Waiter.Wait, with no latch
// held.
//
// # Lock order
//
//	Manager.admin ─▶ stripe latches of one family, in index order
//	                 ─▶ a transaction-table shard latch
//	the Detector's locks ─▶ stripe latches (its questions: detect.go)
//
// Fused, a family's one latch is stripe 0's, the first in that order. The
// detector may ask with its own locks held; the manager never calls it
// with a latch held, but for WaitGraph.Stamp, which takes no lock. A path
// that holds one stripe latch and needs them all drops it first
// (recheckWide). Latches (internal/latch) spin briefly before they sleep.
//
// # Memory and escalation
//
// MaxLockMemory bounds the bytes the locktree and the point Locks
// account, counted sloppily for points (memory.go) so that the hot path
// does no shared atomic write. A request that would go over it escalates
// its column family (escalate.go): each transaction's runs of two or more
// adjacent Exclusive locks, with nobody else's lock or waiter between
// them and no EscalationBarrier, become one wide lock; if that is not
// enough, the request fails with ErrLockLimit.
//
// # Transactions
//
// A transaction table (txns.go) records the stripes each transaction has
// touched in each family, with its locktable.Holds there, and whether it
// has wide locks, so that UnlockAll, which ends a transaction, costs what
// the transaction holds.
package rangelock
