// Package pebbletxn runs pessimistic transactions over a Pebble DB with any
// txnlock lock manager: the TransactionDB that Pebble, unlike RocksDB, does
// not have.
//
// A transaction locks what it reads for update and what it writes before
// touching it, through a txnlock.Manager (pointlock for key locks,
// rangelock for key and range locks). Its writes go to a Pebble indexed
// batch, so its own reads see them; Commit applies the batch atomically and
// then releases every lock; Rollback discards the batch and releases.
//
// # The life of a transaction
//
//	db.Begin(opts)          new TxnID, empty indexed batch, empty lock record
//	   │
//	   ▼
//	GetForUpdate / Lock / Put / Delete / ScanForUpdate / LockRange
//	   │  held in a covering mode? (the transaction's lock record) ── yes ─▶ no request
//	   │  no
//	   ▼
//	Manager.Lock(Request{txn, cf, range, mode, timeout}) ── wait ── timeout / deadlock
//	   │ granted: recorded                                          victim: error, the
//	   ▼                                                            transaction stays open
//	read through the batch (own writes over committed data) ◀──┐    for the caller to roll back
//	write into the batch  ─────────────────────────────────────┘
//	   │
//	   ▼
//	Commit ─▶ pebble Apply(batch, Sync|NoSync): all or nothing ─▶ Manager.UnlockAll
//	Rollback ─▶ drop the batch ─────────────────────────────────▶ Manager.UnlockAll
//
// Reads that take no lock (Get, Scan) see the latest committed data plus
// the transaction's own writes: read committed, like a RocksDB transaction
// without a snapshot. Locking reads lock first and read second, so what
// they return stays true until the transaction ends. For a consistent view
// of everything committed at one moment, use DB.NewSnapshot.
//
// # Locks taken
//
//	call                         point manager          range manager (Options.RangeLocking)
//	Get, Scan                    -                      -
//	GetForUpdate(k, mode)        [k] mode               [k] mode
//	Put, Delete                  [k] X                  [k] X
//	PutUntracked, DeleteUntracked  -                    -
//	ScanForUpdate(r, mode)       [k] mode per key read  r mode (the range itself)
//	Lock(k, mode)                [k] mode               [k] mode
//	LockRange(r, mode)           ErrRangeNotSupported   r mode
//	                             (unless r is one key)
//
// No request is sent for a key the transaction holds in a covering mode
// (Exclusive covers Shared), as a point lock or inside a range lock it took,
// under either manager; LockRequests counts the requests actually sent.
// A range is not sent again if a held range lock covers it.
//
// Phantoms: with the point manager ScanForUpdate locks the keys it found,
// so another transaction may insert a key into the scanned range and a
// second scan returns it. With the range manager the range is locked and
// that insert waits until this transaction ends. The point manager's locks
// are fewer and cheaper; the range manager buys serializable scans.
//
// Which manager locks ranges is declared, not probed: set
// Options.RangeLocking when the Manager is a range manager. A point manager
// asked for a range anyway answers txnlock.ErrRangeNotSupported, which
// comes back unchanged.
//
// # Column families
//
// A column family is a key prefix (a 4-byte id) in the one Pebble DB and a
// column family of the same id in the manager, so it has its own lock map
// or locktree. DB.ColumnFamily(name) creates one and persists the name → id
// mapping; reopening finds it again. The default column family (id 0)
// always exists; a nil *ColumnFamily means it. The manager's column
// families are shared by every DB that uses it: DBs that share a manager
// (to share one deadlock detector, say) lock the same ids, so their
// transactions conflict on equal keys of equal ids. Give each DB its own
// manager, and share the detector instead.
//
// # Errors
//
// Lock errors are the manager's, unchanged: errors.Is(err,
// txnlock.ErrLockTimeout), errors.Is(err, txnlock.ErrDeadlock),
// errors.As(err, &*txnlock.DeadlockError) all work. pebbletxn adds
// ErrTxnDone (a call after Commit or Rollback) and ErrClosed (a closed DB;
// it also matches txnlock.ErrClosed), and reports bad options as
// *txnlock.OptionsError. A failed call leaves the transaction open and its
// batch as before the call; the caller decides whether to roll back.
//
// # Concurrency
//
// A DB is safe for concurrent use; a Txn belongs to one goroutine. DB.Close
// rolls back the open transactions (their later calls fail with ErrClosed)
// and leaves the Pebble DB and the manager to their owner.
package pebbletxn
