// Package pebbletxn runs pessimistic transactions over a Pebble DB with any
// txnlock lock manager: the TransactionDB that Pebble, unlike RocksDB, does
// not have.
//
// Open opens a Pebble store and a DB over it (refusing a damaged
// directory, and turning Pebble's fatal errors into errors where it can),
// and needs no Pebble import; New wraps a DB the caller opened with
// github.com/cockroachdb/pebble/v2.
//
//	m, _ := pointlock.New(pointlock.Options{}) // or rangelock, for range locks
//	db, err := pebbletxn.Open(dir, pebbletxn.OpenOptions{
//		Options: pebbletxn.Options{Manager: m},
//		Quiet:   true, // no "Found 0 WALs" and other Pebble news on stderr
//	})
//	...
//	t, _ := db.Begin(nil)
//	cf := txnlock.DefaultColumnFamily // or an id from db.CreateColumnFamily("orders")
//	v, found, err := t.GetForUpdate(ctx, cf, []byte("balance/alice"), txnlock.Exclusive)
//	err = t.Put(ctx, cf, []byte("balance/alice"), newValue) // locked until Commit
//	err = t.Commit()                                        // or t.Rollback()
//
// A call that fails, a lock wait that timed out or lost a deadlock among
// them, leaves the transaction open with every lock it took: roll it back
// before retrying, or the retry waits for the loser's locks.
//
//	for {
//		err := transfer(ctx, db) // Begin ... Commit, and Rollback on any error
//		if errors.Is(err, txnlock.ErrDeadlock) || errors.Is(err, txnlock.ErrLockNotGranted) {
//			continue // transfer rolled back: its locks are released
//		}
//		...
//	}
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
// Every call names its column family by its txnlock.ColumnFamily id, the
// same id that its lock requests carry. A column family is a key prefix
// (the 4-byte id) in the one Pebble DB and a column family of the same id
// in the manager, so it has its own lock map or locktree.
// DB.CreateColumnFamily(name) creates one (or finds it) and persists the
// name → id mapping; reopening finds it again. txnlock.DefaultColumnFamily
// (id 0, named "default") always exists. An id the DB did not give out
// fails the call with an error matching txnlock.ErrUnknownColumnFamily.
// The manager's column
// families are shared by every DB that uses it: DBs that share a manager
// (to share one deadlock detector, say) lock the same ids, so their
// transactions conflict on equal keys of equal ids. Give each DB its own
// manager, and share the detector instead.
//
// # Errors
//
// Lock errors are the manager's, unchanged: errors.Is(err,
// txnlock.ErrDeadlock), errors.Is(err, txnlock.ErrLockNotGranted) (a lock
// wait timeout, txnlock.ErrLockTimeout, or a NoWait refusal,
// txnlock.ErrLockNoWait), and errors.As(err, &de) with de a
// *txnlock.DeadlockError all work. pebbletxn adds
// ErrTxnDone (a call after Commit or Rollback), ErrClosed (a closed DB;
// it also matches txnlock.ErrClosed) and *StorageError (errors.Is
// ErrStorage) for everything Pebble fails: I/O errors, corruption, a
// closed Pebble DB (errors.Is pebble.ErrClosed), fatal Pebble errors
// (*FatalError); it reports bad options as *txnlock.OptionsError. A failed
// call leaves the transaction open and its batch as before the call; the
// caller decides whether to roll back. A failed Commit ends the
// transaction and applies nothing.
//
// # Durability
//
// A commit with SyncDurability returns once its batch is synced to the WAL
// on stable storage: it survives a process crash, an OS crash and a power
// loss. A commit with NoSyncDurability returns once its batch is in
// Pebble's memtable and in the WAL writer's buffer in the process's memory;
// Pebble writes that buffer to the OS in the background. Such a commit is
// lost by a process crash that comes before the write (Pebble buffers the
// WAL in its own memory), and by an OS crash or a power loss that comes
// before the next sync (any later Sync commit, a memtable flush, or a
// WAL rotation syncs it). What survives is always a prefix of the
// commits in commit order, and never part of one: Pebble replays the WAL
// up to its first torn or missing record and drops the rest.
//
// # Closing
//
// Three objects, each closed by its owner, in this order:
//
//	db.Close()    rolls back the open transactions, releases their locks;
//	              later calls fail with ErrClosed. Closes neither of the two below.
//	pdb.Close()   the Pebble DB (New's caller owns it; Open's DB closes it in db.Close)
//	mgr.Close()   the lock manager, then its deadlock detector, if any
//
// Snapshots and WriteBatches are closed before the DB. A second Close of
// a DB, a Snapshot or a WriteBatch returns an error matching
// txnlock.ErrClosed, as a second Close of a manager or a detector does.
//
// Closed in another order, nothing panics and nothing is half applied:
//   - The manager first: it dropped every lock, so a Commit fails with an
//     error wrapping txnlock.ErrClosed and applies nothing (Commit
//     re-locks one held lock to find out); Lock and every locking call
//     fail the same way; Get, Scan, Rollback and db.Close still work. A
//     manager closed while a Commit is applying its batch, after that
//     check, does not stop it: close the DB first to end commits.
//   - The Pebble DB first: every call that reaches Pebble (Get,
//     Scan, the locking reads after their lock, Commit, NewSnapshot,
//     CreateColumnFamily, WriteBatch.Commit, every Snapshot read) returns a
//     *StorageError wrapping pebble.ErrClosed. Begin touches no Pebble
//     state, so it still succeeds, and the transaction's first read or its
//     Commit fails. A Commit ends its transaction and releases its locks;
//     Rollback and db.Close work.
//
// # Concurrency
//
// A DB is safe for concurrent use; a Txn belongs to one goroutine. DB.Close
// rolls back the open transactions (their later calls fail with ErrClosed)
// and leaves the manager, and a Pebble DB given to New, to their owner.
package pebbletxn
