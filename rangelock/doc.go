// Package rangelock is the range lock manager: it locks ranges of keys,
// so that a transaction that scanned [10, 20] for update keeps every other
// transaction from inserting 15 (the phantom). It implements
// txnlock.Manager, as pointlock does; an engine that only ever locks
// single keys is better served by pointlock.
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
// # Semantics
//
// A request conflicts with every overlapping lock of another transaction
// in an incompatible mode (Shared locks share). Ranges say which ends they
// include (txnlock.Range); a point is the range [k, k], a prefix lock a
// txnlock.Prefix range. Locks are sets: a transaction that holds a range
// holds every key and sub-range of it, and asking again for what it holds
// changes nothing. Unlock releases any held part of what a transaction
// holds (the rest stays held); UnlockAll releases everything.
//
// Waiting is first come, first served among the requests that overlap:
// a request waits for the conflicting holders and for the conflicting
// requests queued ahead of it, and a release grants, in queue order, what
// it can. The root package's doc ("The life of a lock request") states
// the exceptions, which keep a holder from waiting for a request that
// waits for it: a holder's
// upgrade (Shared to Exclusive) waits for the other holders only, a
// holder that widens its range passes the requests that wait for it, and
// a request of a transaction that holds locks passes the queued range
// requests of transactions that hold none. Status lists every lock and
// every waiter with whom it waits for, and a timed-out request's error
// names the same transactions.
//
// # Costs
//
// A point request costs what it costs in pointlock while its column
// family has no range locked or requested: the family's keys are spread
// over Options.Stripes latches, and requests for different keys rarely
// meet. While a range is locked or waited for in a family, every request
// of that family takes one latch, as a PerconaFT locktree does: ranges
// are found in O(log n + k) for k overlaps. Releasing everything costs
// what the transaction holds.
//
// # Memory and escalation
//
// Options.MaxLockMemory bounds the bytes the manager accounts for its
// locks. A request that would go over it first escalates its column
// family: each transaction's runs of two or more adjacent Exclusive locks,
// with no other transaction's lock or waiter between them and no
// Options.EscalationBarrier, become one range lock. If that is not
// enough, the request fails with txnlock.ErrLockLimit.
//
// # Errors
//
// Errors are *txnlock.LockError values wrapping the root package's
// sentinels: ErrLockTimeout (with the blockers), ErrDeadlock from a
// detector, ErrLockLimit, ErrNotHeld, ErrInvalidRange and the other bad
// input errors (nothing changes), ErrUnknownColumnFamily, ErrClosed, or
// the context's error.
package rangelock
