// Package rangelock is the range lock manager: it implements
// txnlock.Manager over ranges of keys, so that a transaction that scanned
// [10, 20] for update keeps every other transaction from inserting 15 (the
// phantom). Point locks are the one-key range [k, k]; prefix locks are
// txnlock.Prefix ranges. It is not the fastest choice for an engine that
// only ever locks single keys: pointlock is.
//
// # Layout
//
// Each column family is split into S stripes (Options.Stripes). A stripe is
// a mutex; the locks of the keys that hash to it, each an
// internal/locktable Lock with its holders and its queue of point
// requests, in a locktable.Table as in pointlock (plus an ordered index of
// them only while the family has wide activity, and each transaction's
// locktable.Holds there); a locktree.Tree with a copy of every wide lock
// of the family; and its counters:
//
//	point [k, k]  ──hash(k) % S──▶ one stripe's point table
//	wide  (any other range)     ──▶ every stripe's locktree (a copy in each)
//
//	 family (cf 1)
//	 ┌──────────┬──────────┬──────────┬──────────┐
//	 │ stripe 0 │ stripe 1 │ stripe 2 │ stripe 3 │  mutex, point Locks
//	 │ [a] [e]  │ [b]      │ [c] [g]  │ [d]      │  with their queues (+
//	 │          │          │          │          │  ordered index while
//	 │          │          │          │          │  wide), locktree
//	 │ [m, p)   │ [m, p)   │ [m, p)   │ [m, p)   │  wide: in every stripe
//	 └──────────┴──────────┴──────────┴──────────┘
//	 wide waiters: one FIFO list per family, indexed by range
//
// Every lock that can conflict with a point request on k is in stripe
// hash(k) % S, so a point request takes one stripe mutex and one column
// family scales like the point manager. A wide request takes every stripe
// mutex, checks one locktree (they are all alike) and the points in its
// range in every stripe. That trade is the design: engines take far more
// point locks than range locks (in MyRocks' published range-locking
// benchmark, one tree-wide mutex cost 36% of the throughput at 100
// threads).
//
// Points stay out of the locktree because a point needs none of its
// segment rewriting: a fresh point is one probe of the stripe's hash table
// (one key hash per request picks both the stripe, from its low bits, and
// the slot, from its high bits), and with nothing wide in the family a
// point request never touches the locktree at all. Where a transaction
// holds a key both as a point and inside a wide range, both records stand;
// Unlock releases the key from both.
//
// # The lazy ordered index
//
// Wide requests and escalation need a stripe's points in key order; point
// requests never do. So the order is kept only while the family has wide
// activity: a wide lock held (the locktrees are not empty) or a wide
// request waiting. Both change only with every stripe mutex held, so any
// one stripe mutex suffices to read them. A wide request (and escalation)
// takes every stripe mutex and, if the index is missing, builds each
// stripe's B-tree of point Locks (held or only waited for) from its table
// (O(n)); while it exists, a Lock enters and leaves both together;
// unlockStripes, the end of every
// every-stripe section, drops the indexes once the activity is gone. A
// points-only workload therefore never touches a B-tree of points, and
// Status scans the tables. A scan by range without the index (never needed
// for correctness, only for order) falls back to a scan of the table.
//
// # Lock order
//
// Stripe mutexes of one family in ascending stripe index, then a
// transaction-table shard mutex, then the Detector's own mutex (inside its
// SetBlockers and DropResource; a waiter's Block, Check and Unblock run in
// lockwait.Waiter.Wait with no lock held). Manager.admin (column
// family registry changes) comes before all of them. A code path that
// holds one stripe and needs all of them first drops the one it holds.
// Stripe and transaction-table mutexes are latches (internal/latch), which
// retry for about half a microsecond before they sleep.
// The ordered index of points takes no lock of its own: a stripe's index
// is guarded by its stripe mutex, and it is built or dropped only with
// every stripe mutex of the family held (so a point request, holding one,
// sees it either present in every stripe or in none).
//
// # The life of a request
//
//	Lock(ctx, {Txn, CF, Range, Mode, Timeout})
//	  validate (typed *txnlock.LockError, state unchanged)
//	  point: lockPointFast, under the stripe of k alone:
//	    a re-lock of a key the txn holds in the mode  ──▶ nil (a no-op)
//	    a key nobody holds or waits for, nothing wide
//	    in the family, within MaxLockMemory            ──▶ acquire, nil
//	    anything else: on, with nothing changed
//	  lock the stripe of k (point) or every stripe (wide)
//	  already covered by the txn's own locks?        ──▶ nil (a no-op)
//	  over MaxLockMemory? drop the locks, escalate the family, retry once;
//	                      still over                 ──▶ ErrLockLimit
//	  blocked := a holder of an incompatible overlapping lock,
//	            or an earlier, still waiting, incompatible, overlapping
//	            request (FIFO: nobody overtakes it) that it does not
//	            skip (a point: its key's Lock decides,
//	            locktable.Lock.Decide, told of the wide locks and the
//	            wide waiters queued earlier; O(1) on a hot key)
//	  not blocked                                    ──▶ acquire, nil
//	  NoWait                                         ──▶ ErrLockTimeout
//	                    (blocked by the nearest requests ahead, or the
//	                     holders: txnlock.WaitStatus.Blockers' rule)
//	  queue (point: its key's Lock, upgrades at the front; wide: the
//	  family list),
//	  give the Detector a resource (a point with no wide waiter ahead:
//	  its key's, whose blockers are the key's holders; otherwise its own,
//	  with every conflict as blockers), unlock, sleep in
//	  lockwait.Waiter.Wait (which reports the wait to the Detector and
//	  removes it) until granted, timed out, cancelled, victim.
//
// A request never waits for a queued request that waits for its
// transaction (the root package doc states the rule; internal/waitsfor's
// Skipped decides it). A transaction that already holds all of the range
// Shared and asks for Exclusive (an upgrade) waits only for the other
// holders, never for the queue (a point upgrade is queued at the front of
// its key's queue, behind earlier upgrades, as in pointlock; a wide
// request queued before it still counts it as behind); a wide request of a holder skips the
// overlapping waiters that wait for it (queuedAheadLocked), so widening a
// held lock past them is no certain deadlock.
//
// # Wake-ups
//
// A release learns from the locktree exactly which ranges it freed and
// re-checks only the waiters that overlap them: the point waiters on those
// keys of the stripe (a released point's Lock directly; under a released
// wide range, the Locks with waiters found through the ordered index) and
// the wide waiters that overlap (found in an interval index of the wide
// waiters, wideindex.go, in O(log W) plus what overlaps). A key's point
// waiters are re-checked by its Lock (locktable.Lock.Grants), which the
// stripe tells what keeps a waiter outside the Lock (a wide lock, or a
// wide waiter queued before it) and which stops as soon as no later waiter
// can be granted. A waiter is granted under the same lock(s): claimed,
// recorded, then woken (lockwait.Waiter.Claim and Wake); otherwise the
// Detector learns its new blockers. Point waiters of one key that have no
// wide waiter queued ahead share one detector resource whose blockers are
// the key's holders (as in pointlock; exact by the Detector's contraction
// argument): a release on a hot key costs O(1) detector calls, not one
// blocker list per waiter (see pointwait.go). Point waiters behind a wide
// waiter, and wide waiters, keep resources of their own with their exact
// blockers.
// Wide waiters are re-checked with every stripe held: a point release
// drops its stripe first, then takes them all in order. A waiter that gives
// up (timeout, context, deadlock victim, Close) unlinks itself and
// re-checks the requests queued behind it in the same way.
//
// # Memory and escalation
//
// MaxLockMemory bounds the bytes the locktrees account (a wide lock costs a
// copy per stripe). A request that would go over it escalates its column
// family: with every stripe held, each transaction's runs of adjacent
// Exclusive locks (adjacent in the whole family, across stripes; no other
// transaction's lock or waiter in between, and not separated by the
// EscalationBarrier) become one wide lock. If that is not enough the request
// fails with ErrLockLimit at once. The global byte count is kept as a
// sloppy counter: each stripe reports its changes when they exceed a small
// slack, so the hot path does no shared atomic write.
//
// # Transactions
//
// A transaction table, sharded by TxnID, remembers which stripes (and
// whether wide locks) each transaction has touched in each family, so that
// UnlockAll costs what the transaction holds. A transaction's
// locktable.Holds of its point locks in a stripe lives in its record
// (guarded by that stripe's mutex), and records are recycled with their
// lists' buffers.
//
// # Cache lines
//
// The fields of a stripe that a point request touches when it needs no
// queue come first; a stripe's size is a multiple of a line, so no two
// stripes share one. A key nobody holds or waits for is not in the
// stripe's table, so one probe tells a point request that it needs no
// queue. A point request that needs no queue allocates nothing: the table
// recycles Locks with their key buffers (locktable.Table).
package rangelock
