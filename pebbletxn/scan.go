package pebbletxn

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// Scan calls fn for every key of r in column family cf,
// in ascending order, as the transaction sees them (its own writes over the
// latest committed data), without locking. It stops early when fn returns
// false. key and value are valid only during the call.
func (t *Txn) Scan(cf txnlock.ColumnFamily, r txnlock.Range, fn func(key, value []byte) bool) error {
	if err := t.check("scan"); err != nil {
		return err
	}
	if !r.Valid() {
		return &txnError{op: "scan", txn: t.id, err: txnlock.ErrInvalidRange}
	}
	if err := t.db.checkCF("scan", t.id, cf); err != nil {
		return err
	}
	return t.scanLocked(cf, r, fn)
}

// scanLocked iterates the batch over r (the transaction already checked).
func (t *Txn) scanLocked(cf txnlock.ColumnFamily, r txnlock.Range, fn func(key, value []byte) bool) (err error) {
	t.db.mu.RLock()
	defer t.db.mu.RUnlock()
	if err := t.db.checkOpenLocked("scan", t.id); err != nil {
		return err
	}
	defer t.db.recoverPebble("scan", t.id, &err)
	lower, upper := bounds(cf, r)
	it, err := t.batch.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return storageErr("scan", t.id, err)
	}
	return storageErr("scan", t.id, iterate(it, fn))
}

// iterate walks it from First, stripping the column family prefix, and
// closes it.
func iterate(it *pebble.Iterator, fn func(key, value []byte) bool) error {
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if !fn(it.Key()[prefixLen:], v) {
			break
		}
	}
	return it.Close()
}

// ScanForUpdate locks, then reads, the keys of r in cf in mode, calling fn
// as Scan does.
//
// With Options.RangeLocking the range r itself is locked first, present
// and absent keys alike: no other transaction can insert into r until this
// one ends, so a second scan returns the same keys (no phantoms). Without
// it, each key found is locked and then read again (it may have changed or
// gone between the read and the grant); keys inserted into r later are not
// locked (phantoms are possible; this is the point-locking trade-off
// MyRocks makes too).
func (t *Txn) ScanForUpdate(ctx context.Context, cf txnlock.ColumnFamily, r txnlock.Range, mode txnlock.Mode, fn func(key, value []byte) bool) error {
	if err := t.check("scan for update"); err != nil {
		return err
	}
	if !r.Valid() {
		return &txnError{op: "scan for update", txn: t.id, err: txnlock.ErrInvalidRange}
	}
	if !mode.Valid() {
		return &txnError{op: "scan for update", txn: t.id, err: txnlock.ErrInvalidMode}
	}
	if err := t.db.checkCF("scan for update", t.id, cf); err != nil {
		return err
	}
	if t.db.opts.RangeLocking {
		if err := t.LockRange(ctx, cf, r, mode); err != nil {
			return err
		}
		return t.scanLocked(cf, r, fn)
	}
	var keys [][]byte
	err := t.scanLocked(cf, r, func(k, _ []byte) bool {
		keys = append(keys, append([]byte(nil), k...))
		return true
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := t.Lock(ctx, cf, k, mode); err != nil {
			return err
		}
		v, found, err := t.getLocked(cf, k)
		if err != nil {
			return err
		}
		if found && !fn(k, v) {
			return nil
		}
	}
	return nil
}
