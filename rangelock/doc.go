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
// a mutex, the point locks of the keys that hash to it (a hash table of
// keys with their holders, internal/keytable as in pointlock; an ordered
// index of them only while the family has wide activity; and each
// transaction's list of them), a locktree.Tree with a copy of every wide
// lock of the family, the queues of the point requests waiting in it, and
// its counters:
//
//	point [k, k]  ──hash(k) % S──▶ one stripe's point table
//	wide  (any other range)     ──▶ every stripe's locktree (a copy in each)
//
//	 family (cf 1)
//	 ┌──────────┬──────────┬──────────┬──────────┐
//	 │ stripe 0 │ stripe 1 │ stripe 2 │ stripe 3 │  mutex, point table
//	 │ [a] [e]  │ [b]      │ [c] [g]  │ [d]      │  (+ ordered index while
//	 │          │          │          │          │  wide), locktree, waiters
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
// stripe's B-tree of points from its hash table (O(n)); while it exists,
// point inserts and deletes keep both; unlockStripes, the end of every
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
//	            skip (a point: the first one found in its key's queue
//	            or among the wide waiters, O(1) on a hot key)
//	  not blocked                                    ──▶ acquire, nil
//	  NoWait                                         ──▶ ErrLockTimeout
//	                    (blocked by the nearest requests ahead, or the
//	                     holders: txnlock.WaitStatus.Blockers' rule)
//	  queue (point: per-key queue of its stripe; wide: the family list),
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
// holders, never for the queue; a wide request of a holder skips the
// overlapping waiters that wait for it (queuedAheadLocked), so widening a
// held lock past them is no certain deadlock.
//
// # Wake-ups
//
// A release learns from the locktree exactly which ranges it freed and
// re-checks only the waiters that overlap them: the point waiters on those
// keys of the stripe (found in an ordered index of waiting keys) and the
// wide waiters that overlap (found in an interval index of the wide
// waiters, wideindex.go, in O(log W) plus what overlaps). A re-check grants the waiter under the same
// lock(s) (lockwait.Waiter.Grant) or tells the Detector its new blockers.
// Point waiters of one key that have no wide waiter queued ahead share
// one detector resource whose blockers are the key's holders (as in
// pointlock; exact by the Detector's contraction argument), and a re-check
// of their queue is one scan that grants the head and stops where two
// transactions wait Exclusive: a release on a hot key costs O(1) detector
// calls, not one blocker list per waiter (see sharedwait.go). Point
// waiters behind a wide waiter, and wide waiters, keep resources of their
// own with their exact blockers.
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
// UnlockAll costs what the transaction holds. A transaction's list of its
// point locks in a stripe lives in its record (guarded by that stripe's
// mutex), and records are recycled with their lists' buffers.
//
// # Cache lines
//
// The fields of a stripe that a point request touches when it needs no
// queue come first and fill its first three cache lines; a stripe's size is
// a multiple of a line, so no two stripes share one. Its free list of
// point locks is intrusive (no array of its own to fetch), and a one-word
// mask of the hash bits of its waiting keys answers "no queue for this
// key" from the first lines. A point request that needs no queue allocates
// nothing: recycled locks keep their key buffers, and a new lock takes a
// recycled one whose buffer has its key's length when there is one.
package rangelock
