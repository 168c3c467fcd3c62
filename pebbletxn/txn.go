package pebbletxn

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// txnState is where a transaction is in its life.
type txnState uint8

const (
	txnActive txnState = iota
	txnCommitted
	txnRolledBack
)

// Txn is a pessimistic transaction: it locks what it reads for update and
// what it writes before touching it, buffers its writes in a Pebble indexed
// batch (so its reads see them), applies the batch atomically at Commit and
// then releases every lock. A Txn is not safe for concurrent use.
//
// Reads that take no lock (Get, Scan) see the latest committed data plus
// the transaction's own writes (read committed, like a RocksDB transaction
// without a snapshot); locking reads (GetForUpdate, ScanForUpdate) lock
// first, then read, so what they return stays true until the transaction
// ends.
type Txn struct {
	db      *DB
	id      txnlock.TxnID
	timeout time.Duration
	wo      *pebble.WriteOptions
	state   txnState
	batch   *pebble.Batch
	// h is the transaction's handle in the manager: its record of the
	// locks it holds (not sent again), released at the end.
	h      *txnlock.Txn
	keyBuf []byte
	// deleted holds the keys (with their column family prefix) whose
	// newest write in batch is a deletion: a read of one is answered
	// without Pebble, which would walk every version of the key in the
	// memtable below the batch's tombstone. Made on the first delete.
	deleted map[string]struct{}
}

// Begin starts a transaction. opts may be nil. It fails with ErrClosed on a
// closed DB, with a *StorageError after a fatal Pebble error, and with a
// *txnlock.OptionsError for bad options. It does not touch Pebble: on a
// closed Pebble DB the transaction's first read or its Commit fails.
func (db *DB) Begin(opts *TxnOptions) (_ *Txn, err error) {
	var o TxnOptions
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	t := &Txn{db: db, id: txnlock.TxnID(nextTxnID.Add(1)), timeout: o.LockTimeout}
	t.h = txnlock.NewTxn(t.id)
	if t.timeout == txnlock.DefaultTimeout {
		t.timeout = db.opts.LockTimeout
	}
	sync := db.opts.Sync
	switch o.Durability {
	case SyncDurability:
		sync = true
	case NoSyncDurability:
		sync = false
	}
	t.wo = pebble.NoSync
	if sync {
		t.wo = pebble.Sync
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if err := db.checkOpenLocked("begin", 0); err != nil {
		return nil, err
	}
	// Creating a batch touches no Pebble state and checks nothing: on a
	// closed Pebble DB, the transaction's first read or its Commit fails.
	// (A check here would cost every transaction a pass through Pebble's
	// commit pipeline: Pebble has no cheaper one.)
	defer db.recoverPebble("begin", 0, &err)
	t.batch = db.pdb.NewIndexedBatch()
	db.addTxn(t)
	return t, nil
}

// SetLockTimeout sets the timeout of the transaction's later lock
// requests, as TxnOptions.LockTimeout (txnlock.DefaultTimeout: the DB's;
// txnlock.NoWait: fail at once with ErrLockTimeout if a lock is not free).
// A session changes it between statements (MySQL's SET SESSION
// innodb_lock_wait_timeout, a statement's NOWAIT). A negative value other
// than txnlock.NoWait is a *txnlock.OptionsError and changes nothing.
func (t *Txn) SetLockTimeout(d time.Duration) error {
	o := TxnOptions{LockTimeout: d}
	if err := o.Validate(); err != nil {
		return err
	}
	if d == txnlock.DefaultTimeout {
		d = t.db.opts.LockTimeout
	}
	t.timeout = d
	return nil
}

// ID is the transaction's id in the lock manager.
func (t *Txn) ID() txnlock.TxnID { return t.id }

// LockRequests is the number of lock requests this transaction sent to the
// manager (granted or not). Locks already held in a covering mode are not
// sent again and not counted.
func (t *Txn) LockRequests() int { return t.h.Requests() }

// check fails calls on an ended transaction: ErrClosed if the DB is
// closed (Close ended it, or will), else ErrTxnDone.
func (t *Txn) check(op string) error {
	if t.state != txnActive {
		if t.db.isClosed() {
			return &txnError{op: op, txn: t.id, err: ErrClosed}
		}
		return &txnError{op: op, txn: t.id, err: ErrTxnDone}
	}
	return nil
}

// key returns the Pebble key of k in cf, in a buffer reused by the next
// call.
func (t *Txn) key(cf txnlock.ColumnFamily, k []byte) []byte {
	t.keyBuf = appendKey(t.keyBuf[:0], cf, k)
	return t.keyBuf
}

// Get returns the value of key in column family cf as
// the transaction sees it, without locking: its own write if it made one,
// else the latest committed value. found is false if there is none.
func (t *Txn) Get(cf txnlock.ColumnFamily, key []byte) (value []byte, found bool, err error) {
	if err := t.check("get"); err != nil {
		return nil, false, err
	}
	if err := t.db.checkCF("get", t.id, cf); err != nil {
		return nil, false, err
	}
	return t.getLocked(cf, key)
}

// getLocked reads through the batch (no transaction lock needed; the name
// says the caller has validated the transaction).
func (t *Txn) getLocked(cf txnlock.ColumnFamily, key []byte) (_ []byte, _ bool, err error) {
	t.db.mu.RLock()
	defer t.db.mu.RUnlock()
	if err := t.db.checkOpenLocked("get", t.id); err != nil {
		return nil, false, err
	}
	k := t.key(cf, key)
	if _, ok := t.deleted[string(k)]; ok {
		return nil, false, nil
	}
	defer t.db.recoverPebble("get", t.id, &err)
	v, closer, err := t.batch.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageErr("get", t.id, err)
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// GetForUpdate locks key in cf in mode (txnlock.Shared or
// txnlock.Exclusive), then reads it as Get does. The lock is taken whether
// or not the key exists, so an absent key stays absent until the
// transaction ends. On a lock failure nothing is read and the error is the
// manager's (errors.Is works against txnlock's sentinels).
func (t *Txn) GetForUpdate(ctx context.Context, cf txnlock.ColumnFamily, key []byte, mode txnlock.Mode) (value []byte, found bool, err error) {
	if err := t.Lock(ctx, cf, key, mode); err != nil {
		return nil, false, err
	}
	return t.getLocked(cf, key)
}

// Put locks key exclusively and sets it to value in the transaction's
// batch.
func (t *Txn) Put(ctx context.Context, cf txnlock.ColumnFamily, key, value []byte) error {
	if err := t.Lock(ctx, cf, key, txnlock.Exclusive); err != nil {
		return err
	}
	return t.PutUntracked(cf, key, value)
}

// Delete locks key exclusively and deletes it in the transaction's batch.
func (t *Txn) Delete(ctx context.Context, cf txnlock.ColumnFamily, key []byte) error {
	if err := t.Lock(ctx, cf, key, txnlock.Exclusive); err != nil {
		return err
	}
	return t.DeleteUntracked(cf, key)
}

// PutUntracked sets key to value without locking it, for keys the caller
// protects by other means (MyRocks writes secondary-index entries this way
// under point locking: the primary-key lock guards the row). Untracked
// writes to keys that other transactions write concurrently lose updates.
func (t *Txn) PutUntracked(cf txnlock.ColumnFamily, key, value []byte) error {
	if err := t.check("put"); err != nil {
		return err
	}
	if err := t.db.checkCF("put", t.id, cf); err != nil {
		return err
	}
	k := t.key(cf, key)
	if err := t.batch.Set(k, value, nil); err != nil {
		return err
	}
	delete(t.deleted, string(k))
	return nil
}

// DeleteUntracked deletes key without locking it; see PutUntracked.
func (t *Txn) DeleteUntracked(cf txnlock.ColumnFamily, key []byte) error {
	if err := t.check("delete"); err != nil {
		return err
	}
	if err := t.db.checkCF("delete", t.id, cf); err != nil {
		return err
	}
	k := t.key(cf, key)
	if err := t.batch.Delete(k, nil); err != nil {
		return err
	}
	if t.deleted == nil {
		t.deleted = make(map[string]struct{})
	}
	t.deleted[string(k)] = struct{}{}
	return nil
}

// Commit applies the transaction's writes atomically (synced to the WAL if
// its durability says so), then releases every lock. The transaction ends
// whatever the outcome: on an error nothing was applied and the locks are
// released as by Rollback, except after a *FatalError, when Pebble's state
// is unknown until the store is reopened.
//
// Before applying, Commit asks the manager once more for one lock the
// transaction holds (a re-lock: granted at once, nothing changes; the
// manager's Stats.Acquired counts it). A manager closed since the locks
// were granted has dropped them, so the commit fails with an error
// wrapping txnlock.ErrClosed and applies nothing. A transaction that holds
// no lock (only untracked writes) is not checked.
func (t *Txn) Commit() (err error) {
	if err := t.check("commit"); err != nil {
		return err
	}
	t.state = txnCommitted
	defer t.finish()
	if t.batch.Empty() {
		if t.db.isClosed() {
			return &txnError{op: "commit", txn: t.id, err: ErrClosed}
		}
		return nil
	}
	t.db.mu.RLock()
	defer t.db.mu.RUnlock()
	if err := t.db.checkOpenLocked("commit", t.id); err != nil {
		return err
	}
	if err := t.confirmLocks(); err != nil {
		return &txnError{op: "commit", txn: t.id, err: err}
	}
	defer t.db.recoverPebble("commit", t.id, &err)
	return storageErr("commit", t.id, t.db.pdb.Apply(t.batch, t.wo))
}

// confirmLocks re-locks one lock the transaction holds, without waiting:
// the manager grants it at once while it still holds it, and fails with
// txnlock.ErrClosed once closed.
func (t *Txn) confirmLocks() error {
	req := txnlock.Request{Txn: t.id, Timeout: txnlock.NoWait}
	t.h.Locks(func(_ txnlock.Manager, l txnlock.LockRef) bool {
		req.CF, req.Range, req.Mode = l.CF, l.Range, l.Mode
		return false
	})
	if !req.Range.Valid() {
		return nil // no lock held
	}
	// Sent to the manager directly: through the handle, a held lock is
	// not sent again.
	return t.db.opts.Manager.Lock(context.Background(), req)
}

// Rollback discards the transaction's writes and releases its locks. On a
// closed DB it still ends the transaction, and returns ErrClosed.
func (t *Txn) Rollback() error {
	if err := t.check("rollback"); err != nil {
		return err
	}
	t.state = txnRolledBack
	t.finish()
	if t.db.isClosed() {
		return &txnError{op: "rollback", txn: t.id, err: ErrClosed}
	}
	return nil
}

// finish releases the locks and the batch of an ended transaction.
func (t *Txn) finish() {
	t.db.removeTxn(t)
	// Errors: only from a broken manager (a closed one holds nothing).
	_ = t.h.Release()
	_ = t.batch.Close()
	t.batch = nil
}
