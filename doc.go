// Package txnlock is the shared vocabulary of the txnlock lock managers:
// transaction ids, lock modes, column families, keys and ranges, the Manager
// interface that every lock manager implements, the interface through which
// managers report waits to a deadlock detector, and the errors they return.
//
// txnlock is a library for storage engines that run pessimistic
// transactions: before a transaction reads for update or writes a key, it
// asks a lock manager for a lock on that key (pointlock) or on a range of
// keys (rangelock), and it releases everything at commit or rollback.
//
//	m, _ := pointlock.New(pointlock.Options{}) // or rangelock.New
//	row := txnlock.Point([]byte("orders/17"))
//	err := m.Lock(ctx, txnlock.Request{Txn: 7, Range: row, Mode: txnlock.Exclusive})
//	switch {
//	case errors.Is(err, txnlock.ErrLockNotGranted): // timed out, or NoWait: retry or roll back
//	case errors.Is(err, txnlock.ErrDeadlock):       // the detector chose txn 7: roll back
//	}
//	...
//	m.UnlockAll(7) // commit or rollback
//
// # The life of a lock request
//
//	Lock(ctx, Request{Txn, CF, Range, Mode, Timeout})
//	       │
//	       ▼
//	┌─────────────────┐  compatible with holders and     ┌─────────┐
//	│ conflict check  │─ nobody queued ahead ───────────▶│ granted │
//	└─────────────────┘                                  └─────────┘
//	       │ conflict                                         ▲
//	       ▼                                                  │ targeted wake-up
//	┌─────────────────┐  Timeout == NoWait                    │ (only requests that
//	│ FIFO wait queue │─────────────────▶ ErrLockNoWait       │  can now be granted)
//	└─────────────────┘                                       │
//	       │ the detector hears of the wait                   │
//	       ▼                                                  │
//	┌─────────────────┐  cycle, this txn is the victim        │
//	│ deadlock check  │─────────────────▶ *DeadlockError      │
//	└─────────────────┘                                       │
//	       │ no cycle (or the search is deferred)             │
//	       ▼                                                  │
//	┌─────────────────┐  ctx done ──────▶ ctx.Err()           │
//	│      sleep      │  timeout ───────▶ ErrLockTimeout      │
//	└─────────────────┘  chosen victim ─▶ *DeadlockError      │
//	       │                                                  │
//	       └──── holder calls Unlock / UnlockAll ─────────────┘
//
// A request is first checked against the lock's holders and its queue. If it
// is compatible with every holder and no incompatible request waits ahead of
// it, it is granted at once. Otherwise it joins the lock's FIFO queue and
// reports its wait to the Detector, which asks the manager whom it waits
// for when a search needs to know (Detector).
//
// Waiting is first come, first served, with two exceptions, both for a
// request of a transaction T that holds a lock. First, it never waits for
// a queued request that cannot be granted before T releases something, one
// that conflicts with a lock T holds or that is blocked by such a request,
// directly or through a chain of queued requests (waiting for it would be
// a certain deadlock). An upgrade from Shared to Exclusive is the common
// case: it waits only for the other holders. Widening a held range past
// requests that wait for it is another (rangelock applies the rule to its
// requests for more than one key; a request for one key skips only as an
// upgrade). Second, in a range manager, it does not wait for a queued
// range request (not a single key) whose transaction held no lock in the
// column family when the request queued: that request keeps no one
// waiting but the requests behind it, while T's locks may, so T goes
// first (InnoDB's contention-aware scheduling favours the transaction
// others wait for in the same way).
// Whether the second exception applies is settled when the two requests
// queue: what a transaction takes or lets go of while its request waits
// changes no one's wait. T's request is queued ahead of the requests it
// skips and still waits for every conflicting holder and every other
// conflicting request ahead. Only a holder skips: the requests of
// transactions that hold nothing keep their order among themselves, and
// one that a holder passes waits for it as for any holder, up to its
// lock-wait timeout. Two Shared holders that both upgrade still deadlock,
// as they must. The
// detector may find a cycle and pick a victim; the waiter then sleeps until it
// is granted, its context ends, its lock-wait timeout fires, or the detector
// fails it. A waiter that gives up leaves no trace: it is removed from the
// queue and the requests behind it are re-checked exactly as after a release.
// A release wakes only the requests that can now be granted: the leading
// Shared requests, or the first Exclusive one.
//
// # Keys and ranges
//
// Keys are byte strings in bytewise order (bytes.Compare). A Range is a set
// of keys between two bounds; each end is inclusive, exclusive or infinite.
// Ranges are normalized when built (see Range) so that two ranges covering
// the same keys are Equal. Every call that takes a range says which of its
// ends are inclusive, in bracket notation: [start, end] or [start, end).
//
// # Transaction ids and column families
//
// A TxnID names one transaction in every manager that shares a Detector; the
// zero TxnID is invalid. A ColumnFamily is an independent key space inside a
// manager; the default column family 0 always exists, others are added and
// dropped with AddColumnFamily and DropColumnFamily.
//
// # Transactions
//
// A transaction that locks in several managers (rows in a pointlock, an
// index in a rangelock) must call UnlockAll in each when it ends. A Txn
// handle does it: it remembers every manager it locked in and what it
// holds, sends no request a held lock covers, releases what was taken
// after a Savepoint (RollbackTo), and ends the transaction everywhere with
// one Release, which also fails a lock wait still in progress. pebbletxn
// locks through one.
//
// # Errors
//
// Every error a manager returns is usable with errors.Is against the
// exported sentinels and with errors.As against *LockError (which request
// failed and why) and *DeadlockError (the cycle). A request that was not
// granted because the lock was held ends with ErrLockTimeout (it waited
// its timeout out, MySQL's 1205) or ErrLockNoWait (a NoWait request that
// would have waited, MySQL's 3572); both match ErrLockNotGranted, so one
// test covers both. ErrDeadlock means the transaction was a deadlock's
// victim. Either way the transaction should roll back (or retry the
// request); its other locks stay held until it does. Bad input never
// panics and never changes lock state.
//
// # Closing
//
// Close a stack from the top: a pebbletxn.DB before its lock managers, the
// managers before the deadlock.Detector they share. Close fails every
// waiting request with ErrClosed, and every later call of a closed object
// fails with ErrClosed, a second Close included: a closed manager drops
// its locks, and a closed detector refuses new waits (their requests fail
// with ErrClosed) while it still searches the waits it has.
package txnlock
