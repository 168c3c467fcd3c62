package pebbletxn

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// WriteBatch writes without transactions or locks, for bulk loads into
// data no transaction uses yet (RocksDB's writes through GetBaseDB). Its
// writes apply atomically at Commit. Not safe for concurrent use.
type WriteBatch struct {
	db    *DB
	batch *pebble.Batch
	key   []byte
}

// NewWriteBatch returns an empty WriteBatch.
func (db *DB) NewWriteBatch() *WriteBatch {
	return &WriteBatch{db: db, batch: db.pdb.NewBatch()}
}

// Put sets key in cf to value.
func (w *WriteBatch) Put(cf txnlock.ColumnFamily, key, value []byte) error {
	if w.batch == nil {
		return &txnError{op: "write batch put", err: ErrClosed}
	}
	if err := w.db.checkCF("write batch put", 0, cf); err != nil {
		return err
	}
	w.key = appendKey(w.key[:0], cf, key)
	return w.batch.Set(w.key, value, nil)
}

// Delete removes key from cf.
func (w *WriteBatch) Delete(cf txnlock.ColumnFamily, key []byte) error {
	if w.batch == nil {
		return &txnError{op: "write batch delete", err: ErrClosed}
	}
	if err := w.db.checkCF("write batch delete", 0, cf); err != nil {
		return err
	}
	w.key = appendKey(w.key[:0], cf, key)
	return w.batch.Delete(w.key, nil)
}

// DeleteRange removes every key of r in cf (a dropped table, say), as one
// range tombstone: its cost does not grow with the number of keys.
func (w *WriteBatch) DeleteRange(cf txnlock.ColumnFamily, r txnlock.Range) error {
	if w.batch == nil {
		return &txnError{op: "write batch delete range", err: ErrClosed}
	}
	if !r.Valid() {
		return &txnError{op: "write batch delete range", err: txnlock.ErrInvalidRange}
	}
	if err := w.db.checkCF("write batch delete range", 0, cf); err != nil {
		return err
	}
	lower, upper := bounds(cf, r)
	return w.batch.DeleteRange(lower, upper, nil)
}

// Len is the number of writes in the batch.
func (w *WriteBatch) Len() int { return int(w.batch.Count()) }

// Commit applies the batch (synced if sync) and empties it for reuse.
func (w *WriteBatch) Commit(sync bool) (err error) {
	if w.batch == nil {
		return &txnError{op: "write batch commit", err: ErrClosed}
	}
	w.db.mu.RLock()
	defer w.db.mu.RUnlock()
	if err := w.db.checkOpenLocked("write batch commit", 0); err != nil {
		return err
	}
	defer w.db.recoverPebble("write batch commit", 0, &err)
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	if err := w.db.pdb.Apply(w.batch, wo); err != nil {
		return storageErr("write batch commit", 0, err)
	}
	w.batch.Reset()
	return nil
}

// Close discards the batch. A second Close returns ErrClosed.
func (w *WriteBatch) Close() error {
	if w.batch == nil {
		return &txnError{op: "close write batch", err: ErrClosed}
	}
	err := w.batch.Close()
	w.batch = nil
	return err
}
