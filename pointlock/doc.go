// Package pointlock is a lock manager for single keys: Shared and
// Exclusive locks per column family, with first-come first-served waiting,
// lock-wait timeouts, context cancellation, an optional limit on the keys
// locked, and an optional deadlock detector. It implements
// txnlock.Manager; use rangelock to lock ranges of keys.
//
//	m, err := pointlock.New(pointlock.Options{}) // zero Options: the defaults
//	if err != nil { ... }
//	defer m.Close()
//	row := txnlock.Point([]byte("orders/17"))
//	err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: row, Mode: txnlock.Exclusive})
//	switch {
//	case errors.Is(err, txnlock.ErrDeadlock):       // txn 1 was a deadlock's victim: roll back
//	case errors.Is(err, txnlock.ErrLockNotGranted): // timed out (or NoWait): roll back or retry
//	case err != nil:                                // ctx ended, bad input, ErrLockLimit, ErrClosed
//	}
//	...                                             // read and write orders/17
//	m.UnlockAll(1)                                  // at commit or rollback
//
// To find deadlocks, give the manager a detector in its Options
// (WaitOptions.Detector, from deadlock.New), shared with the other
// managers the transactions lock in.
//
// # Semantics
//
// A request names one key: a Range of exactly one key, as txnlock.Point
// makes. A wider range fails with txnlock.ErrRangeNotSupported.
//
// Locks are sets, not counters. A transaction that locks a key it holds
// gets what it asked for at once if its lock covers it (Exclusive covers
// Shared), and an upgrade from Shared to Exclusive otherwise; one Unlock
// releases the key however many times it was locked. A transaction's
// locks are released by Unlock (one key) or UnlockAll (everything, at
// the end of the transaction); UnlockAll must be called when a
// transaction ends, even after unlocking everything one by one.
//
// A request that conflicts with a holder, or with a request queued ahead
// of it, waits in the key's queue in arrival order, with the exceptions
// the txnlock package doc gives (an upgrade waits only for the other
// holders). It ends when it is granted, when its timeout fires
// (txnlock.ErrLockTimeout; Request.Timeout, or the manager's
// WaitOptions.LockTimeout, 5 s by default), when its context ends, when
// the detector chooses it as a deadlock's victim (txnlock.ErrDeadlock), or
// when the manager closes (txnlock.ErrClosed). A NoWait request that
// would wait fails at once with txnlock.ErrLockNoWait and is not queued.
//
// # Guarantees
//
//   - A Lock that fails leaves the manager as before the call: nothing
//     held, nothing queued.
//   - Bad input (the zero TxnID, an invalid mode or range, an unknown
//     column family, a nil context) returns a *txnlock.LockError before
//     any state is touched; it never panics.
//   - A release grants the requests it makes grantable and wakes only
//     them: the leading Shared requests of a queue, or its first
//     Exclusive one.
//   - A Manager is safe for concurrent use. Calls for one transaction may
//     come from several goroutines: an abort may call UnlockAll while the
//     transaction waits.
//   - With MaxLocks set, a request for a key not yet locked beyond the
//     limit fails at once with txnlock.ErrLockLimit; requests for keys
//     already locked still succeed.
//
// # Costs
//
// An uncontended Lock and Unlock cost little more than a mutex-guarded
// map: keys are spread over Options.Stripes independent stripes, so
// requests for different keys seldom share a mutex. UnlockAll costs what
// the transaction holds, not the size of the manager. A wait allocates
// nothing once the manager is warm. A held lock takes about 100–120 bytes
// with 16-byte keys. Status walks every lock and waiter: call it for
// introspection, not on every request.
//
// # Errors
//
// Every error is a *txnlock.LockError naming the request, wrapping a
// txnlock sentinel (test with errors.Is): ErrLockTimeout or ErrLockNoWait
// (both match ErrLockNotGranted; the LockError names the holders it
// waited, or would have waited, for), ErrDeadlock (errors.As gives the
// *txnlock.DeadlockError with the cycle), ErrLockLimit, ErrClosed, a bad-input
// sentinel, or the context's error.
package pointlock

// For maintainers: how the package is built. (This comment is not the
// package doc; go doc does not show it.)
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
//	manager.go  New, column families and Close: internal/shell's Shell
//	            (the registry, the records of what each transaction holds,
//	            as a locktable.Holds, so UnlockAll costs what it holds, and
//	            the detector's attachment) and the stripes' part of them
//	detect.go   the detector's questions, answered under a stripe latch
//
// Bad input returns a *txnlock.LockError before any state is touched. A
// wait allocates nothing in the steady state: waiters are recycled
// (lockwait.Waiter.Release), and the detector's lock reference is a copy of
// the key made once per contended key.
//
// Deadlock seam. The manager tells the detector nothing when it grants or
// releases, but for an upgrade granted at once past the key's queue
// (Passed: the queue now waits for the upgrader, which may wait
// elsewhere). A waiter carries its stripe as the place to ask (detect.go)
// and the holders it was queued behind; its own goroutine reports the
// wait (Block) and removes it (Unblock) in lockwait.Waiter.Wait, outside
// the stripe's critical section. When a search reaches the wait, the
// detector asks the stripe, under its latch, for the key's holders
// (Blockers) or for whom the wait waits directly (WaitsFor, to confirm a
// cycle). With a nil Detector none of this happens.
//
// Lock order:
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
// Memory. An uncontended lock is one 48-byte locktable.Lock, the key's
// bytes, one 16-byte table slot (at a load factor between 3/16 and 3/4)
// and one pointer in the holder's record: about 100–120 bytes per lock
// with 16-byte keys (BenchmarkMemoryPerLock). Emptied Locks are recycled
// per stripe with their key buffers, so a lock/unlock cycle of a fresh key
// allocates nothing in the steady state.
//
// Transactions. A transaction's record is created by its first granted
// lock (internal/shell's Records) and stays, perhaps empty, until
// UnlockAll.
