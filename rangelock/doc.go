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
// exception to FIFO (a request never waits for a queued request that
// waits for its transaction) is the root package's. A point key's lock is
// a locktable.Lock, as in pointlock. A request goes through four files (a
// point request through wide.go only when its family has wide activity):
//
//	lock.go     Lock: validate; grant a point that needs no queue under
//	            its stripe latch alone (lockPointFast), else family.lock:
//	            grant, fail (NoWait) or enqueue, unlatch and Wait; a failed
//	            wait leaves its queue in abandon
//	points.go   a stripe's point keys (its locktable.Table of Locks, the
//	            ordered index), their grants and releases; the point
//	            queue: its re-check and grants, a key's holders
//	wide.go     wide requests: the every-stripe sections, whom a wide
//	            request waits for, the wide waiter list, the re-check and
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
// range skips the waiters that wait for it (internal/waitsfor.Skipped); a
// point request skips only as an upgrade.
//
// # Layout
//
// Each column family has S stripes (Options.Stripes). A stripe is a latch
// over the Locks of the keys that hash to it and a locktree.Tree with a
// copy of every wide lock of the family:
//
//	family (cf 1)
//	┌──────────┬──────────┬──────────┬──────────┐
//	│ stripe 0 │ stripe 1 │ stripe 2 │ stripe 3 │  point [k, k]: in stripe hash(k) % S
//	│ [a] [e]  │ [b]      │ [c] [g]  │ [d]      │
//	│ [m, p)   │ [m, p)   │ [m, p)   │ [m, p)   │  wide: a copy in every stripe
//	└──────────┴──────────┴──────────┴──────────┘
//	wide waiters: one FIFO list per family, indexed by range (wideindex.go)
//
// Every lock that can conflict with a point request on k is in k's
// stripe, so a point request takes one latch (and, with nothing wide in
// the family, never touches the locktree); a wide request takes every
// latch and checks one locktree and the points in its range in every
// stripe. That is the trade: engines take far more point locks than range
// locks (in MyRocks' published range-locking benchmark, one tree-wide
// mutex cost 36% of the throughput at 100 threads). A stripe starts with
// what a point request that needs no queue touches and fills whole cache
// lines, so no two stripes share one; such a request allocates nothing
// (the table recycles Locks).
//
// # The lazy ordered index
//
// Wide requests and escalation scan points in key order; point requests
// never do. So the stripes keep a B-tree of their Locks only while the
// family has wide activity (a wide lock held or a wide request waiting):
// built from the tables when first needed (orderPointsLocked), dropped by
// unlockStripes once the activity is gone, both with every latch held, so
// a point request sees the index in every stripe or in none.
//
// # Deadlock seam
//
// The detector asks; the manager does not tell (detect.go). A waiter is
// queued with its family's lockwait.Source, and the detector asks it,
// whenever a search needs it, whom the wait is blocked by and whom it
// waits for, answered from the live lock table under the latches of the
// waiter's queue (its stripe; every stripe for a wide waiter). A point
// waiter with no overlapping wide waiter ahead is blocked by its key's
// holders, point and wide, as in pointlock: its queue is not walked (exact
// by the contraction argument of txnlock.Waiter.Blockers; see points.go).
// A point waiter behind an overlapping wide waiter, and every wide waiter,
// is answered with its own conflicts: the holders and the requests queued
// ahead. Grants and releases cost the detector nothing; Block and Unblock
// run in lockwait.Waiter.Wait, with no latch held.
//
// # Lock order
//
//	Manager.admin ─▶ stripe latches of one family, in index order
//	                 ─▶ a transaction-table shard latch
//	the Detector's locks ─▶ stripe latches (its questions: detect.go)
//
// The detector may ask with its own locks held; the manager never calls
// it with a latch held, but for WaitGraph.Stamp, which takes no lock. A
// path that holds one stripe latch and needs them all drops it
// first (recheckWide). The ordered indexes and the wide waiter list change
// with every stripe latch held and are read with any one. Latches
// (internal/latch) spin briefly before they sleep.
//
// # Memory and escalation
//
// MaxLockMemory bounds the bytes the locktrees and point Locks account (a
// wide lock costs a copy per stripe), counted sloppily (memory.go) so that
// the hot path does no shared atomic write. A request that would go over
// it escalates its column family (escalate.go): each transaction's runs of
// adjacent Exclusive locks, with nobody else's lock or waiter between them
// and no EscalationBarrier, become one wide lock; if that is not enough,
// the request fails with ErrLockLimit.
//
// # Transactions
//
// A transaction table (txns.go) records the stripes each transaction has
// touched in each family, with its locktable.Holds there, and whether it
// has wide locks, so that UnlockAll, which ends a transaction, costs what
// the transaction holds.
package rangelock
