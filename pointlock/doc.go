// Package pointlock is the point-lock manager: Shared and Exclusive locks
// on single keys, per column family, with fair FIFO waiting, lock-wait
// timeouts, context cancellation, a lock limit, and a seam to a deadlock
// detector. It implements txnlock.Manager; a request for a range of more
// than one key fails with ErrRangeNotSupported (use rangelock for ranges).
//
// It is built to cost little more than a mutex-guarded map when there is no
// contention, and to never waste work when there is: a release wakes only
// the requests it makes grantable.
//
// # Structure
//
//	Manager
//	 ├─ cfs (atomic pointer, copy on write) ─▶ cfTable: cf ─▶ lockMap
//	 │      lockMap = [Stripes]stripe, chosen by a seeded hash of the key
//	 │      stripe  = mu + table (internal/keytable: hash → *entry) +
//	 │                counters (plain integers under mu, no atomics)
//	 │      entry   = key + first holder + *extra (more holders, FIFO
//	 │                queue of lockwait.Waiters, detector resource)
//	 └─ txns (txntable: striped by TxnID) ─▶ txnRecord: []*hold
//	        what each transaction holds, so that UnlockAll costs what the
//	        transaction holds, and Unlock is O(1) (a hold knows its slot)
//
// # The life of a lock request
//
//	Lock(ctx, Request{Txn, CF, Point(k), Mode, Timeout})
//	  │ validate (txn, mode, range, timeout, cf, ctx): bad input returns
//	  │ a *LockError before any state is touched
//	  ▼
//	stripe := cfs[cf].stripe(hash(k)); lock stripe.mu
//	  │
//	  ├─ no entry for k ─────────────────────────── MaxLocks? ─▶ insert entry,
//	  │                                                          hold, GRANTED
//	  ├─ txn holds k in a covering mode ─────────────────────▶ GRANTED (no-op)
//	  ├─ txn is the sole holder, wants X ────────────────────▶ upgrade, GRANTED
//	  ├─ compatible with holders, no active waiter ──────────▶ add hold, GRANTED
//	  ├─ Timeout == NoWait ──────────────────────────────────▶ ErrLockTimeout
//	  ▼
//	queue a lockwait.Waiter on the entry: at the back, or for an upgrade
//	behind earlier upgrades and ahead of everyone else
//	  │ unlock stripe.mu; count the txn's locks (for the detector)
//	  ▼
//	Waiter.Wait(ctx, timeout, clock, detector): Block, maybe Check, ...
//	  ├─ Grant by a releaser (under stripe.mu: waiter unlinked, hold
//	  │  recorded in the entry and the transaction's record, then
//	  │  signalled; the releaser touches the waiter no more)
//	  │  ─▶ Unblock ─▶ Release the waiter to its pool ─▶ nil
//	  └─ Fail (timeout, ctx, deadlock victim, Close) ─▶ Unblock; lock
//	     stripe.mu, unlink, re-check the queue like a release; Release
//	     the waiter ─▶ err
//
// So a wait allocates nothing in the steady state: waiters and their
// channels are recycled (lockwait.Waiter.Release), and the detector's lock
// reference is a copy of the key made once per contended entry.
//
// A release (Unlock, UnlockAll, or a waiter that gives up) ends in
// settleLocked: it walks the queue from the front, skips waiters that
// already failed, grants every request the holders now allow, and stops at
// the first active request that must still wait. So the leading Shared
// requests, or the first Exclusive one, are woken — nobody else — and a
// Shared request never overtakes a waiting Exclusive one.
//
// Two Shared holders that both upgrade wait for each other. With a Detector
// the cycle is found (each upgrade waits for the lock's other holders);
// without one, the waits end with ErrLockTimeout.
//
// # Deadlock seam
//
// When an entry gets its first waiter it asks the Detector for a
// ResourceID and sets its blockers (the holders); every change of the
// holders while waiters exist calls SetBlockers again; the last waiter to
// leave calls DropResource. The waiter's own goroutine, in Waiter.Wait,
// reports its wait to that resource (Block) and removes it (Unblock),
// outside the stripe's critical sections: a hot key's queue never waits
// for the detector's graph. With a nil Detector none of this happens.
//
// # Lock order
//
//	stripe.mu ─▶ txntable stripe mutex
//	stripe.mu ─▶ the Detector's own mutex (SetBlockers, DropResource)
//
// A goroutine holds at most one stripe.mu, except DropColumnFamily, which
// locks all stripes of one column family in index order. Manager.cfMu
// (column family changes, Close) comes before every stripe.mu. Waiter.Wait
// runs with no lock held. stripe.mu and the transaction table's stripe
// mutexes are latches (internal/latch): held for a few table operations,
// so a collision retries for about half a microsecond before it sleeps.
//
// # Memory
//
// An entry is 48 bytes on 64-bit platforms, one allocation size class:
//
//	entry ┌──────────────┬──────────┬────────────────────────────────────┐
//	      │ key string   │ x *extra │ h hold: e, rec, slot, mode, cfIdx  │
//	      │ 16 B         │ 8 B      │ 24 B (the first holder, embedded)  │
//	      └──────────────┴──────────┴────────────────────────────────────┘
//	                          │ nil until a second holder or a waiter
//	                          ▼ needs it
//	extra ┌──────────────┬──────────────────────────┬──────────────────┐
//	      │ more []*hold │ q lockwait.Queue (FIFO)  │ res: detector    │
//	      │ (shared)     │ upgrades at the front    │ resource or 0    │
//	      └──────────────┴──────────────────────────┴──────────────────┘
//
// An uncontended lock is one entry, the key's bytes, one 16-byte table slot (the key's 64-bit hash
// and the entry pointer, at a load factor between 3/16 and 3/4), and one
// pointer in the holder's record: about 100–120 bytes per lock with 16-byte
// keys (BenchmarkMemoryPerLock). Second holders and waiters allocate the
// entry's extra on demand. Released entries are recycled per stripe (at
// most 64 kept) with their key buffers, so in steady state a lock/unlock
// cycle of a fresh key allocates nothing (see stripe.newEntryLocked for why
// reusing the buffer is sound); a new entry takes a recycled one whose key
// has its key's length if one is near the head of the free list, so keys
// of several lengths do not allocate either.
//
// # Transactions
//
// A transaction's record (what it holds) is created by its first granted
// lock and removed by UnlockAll: a transaction ends with UnlockAll, as at
// commit or rollback. Calls for one transaction may come from several
// goroutines (an abort may call UnlockAll while the transaction waits);
// records are guarded by their txntable stripe, so this is safe.
package pointlock
