// Package pointlock is the point-lock manager: Shared and Exclusive locks
// on single keys, per column family, with fair FIFO waiting, lock-wait
// timeouts, context cancellation, a lock limit, and a seam to a deadlock
// detector. It implements txnlock.Manager; a request for a range of more
// than one key fails with ErrRangeNotSupported (use rangelock for ranges).
//
//	m, err := pointlock.New(pointlock.Options{}) // zero Options: the defaults
//	if err != nil { ... }
//	defer m.Close()
//	row := txnlock.Point([]byte("orders/17"))
//	err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: row, Mode: txnlock.Exclusive})
//	...
//	m.UnlockAll(1) // at commit or rollback
//
// It costs little more than a mutex-guarded map when there is no
// contention, and never wastes work when there is: a release wakes only
// the requests it makes grantable.
//
// # The life of a request
//
// The rules (who is granted, who waits, in what order, who is woken) are
// internal/locktable's, told once in its package doc; pointlock is the
// shell that latches, waits and counts around them, in five files:
//
//	lock.go     Lock: validate; latch the key's stripe; find or make the
//	            key's locktable.Lock; Decide; grant, fail (NoWait) or
//	            enqueue a lockwait.Waiter, unlatch, and Wait
//	release.go  Unlock, UnlockAll, and a failed wait's leaving: release
//	            the hold, then settleLocked grants what Lock.Grants yields
//	            (Claim, record the hold, Wake), keeps the counts, and
//	            drops an empty key
//	stripe.go   column family → stripes (a seeded hash of the key picks
//	            one); a stripe is a latch, a locktable.Table and counters
//	manager.go  the column family registry, the transaction table
//	            (txntable: what each transaction holds, as a
//	            locktable.Holds, so UnlockAll costs what it holds), Close
//	detect.go   the detector's questions, answered under a stripe latch
//
// Bad input returns a *txnlock.LockError before any state is touched. A
// wait allocates nothing in the steady state: waiters are recycled
// (lockwait.Waiter.Release), and the detector's lock reference is a copy of
// the key made once per contended key.
//
// # Deadlock seam
//
// The manager tells the detector nothing when it grants or releases, but
// for an upgrade granted at once past the key's queue (Passed: the queue
// now waits for the upgrader, which may wait elsewhere). A
// waiter carries its stripe as the place to ask (detect.go) and the
// holders it was queued behind; its own goroutine reports the wait
// (Block) and removes it (Unblock) in lockwait.Waiter.Wait, outside the
// stripe's critical section. When a search reaches the wait, the detector
// asks the stripe, under its latch, for the key's holders (Blockers) or
// for whom the wait waits directly (WaitsFor, to confirm a cycle). With a
// nil Detector none of this happens.
//
// # Lock order
//
//	the registry's Mu ─▶ stripe latch ─▶ a record stripe's Mu (internal/shell)
//	the Detector's locks ─▶ stripe latch (its questions)
//
// A goroutine holds at most one stripe latch, except DropColumnFamily,
// which latches every stripe of one column family in index order.
// Waiter.Wait runs with no latch held. Latches (internal/latch) are held
// for a few table operations, so a collision spins briefly before it
// sleeps.
//
// # Memory
//
// An uncontended lock is one 48-byte locktable.Lock, the key's bytes, one
// 16-byte table slot (at a load factor between 3/16 and 3/4) and one
// pointer in the holder's record: about 100–120 bytes per lock with
// 16-byte keys (BenchmarkMemoryPerLock). Emptied Locks are recycled per
// stripe with their key buffers, so a lock/unlock cycle of a fresh key
// allocates nothing in the steady state.
//
// # Transactions
//
// A transaction's record is created by its first granted lock and stays,
// perhaps empty, until UnlockAll: a transaction ends with UnlockAll, as at
// commit or rollback. Calls for one transaction may come from several
// goroutines (an abort may call UnlockAll while the transaction waits).
package pointlock
