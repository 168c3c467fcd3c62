package pebbletxn

import (
	"context"
	"errors"

	"github.com/txnlock/txnlock"
)

// Lock locks key in column family cf in mode, unless the
// transaction already holds it in a covering mode (then no request is sent).
// The lock is held until Commit or Rollback. Errors are the manager's
// (*txnlock.LockError: ErrLockTimeout, ErrDeadlock, ...), ErrTxnDone or
// ErrClosed; after a lock error the transaction is still active and the
// caller decides (usually Rollback).
func (t *Txn) Lock(ctx context.Context, cf txnlock.ColumnFamily, key []byte, mode txnlock.Mode) error {
	if err := t.check("lock"); err != nil {
		return err
	}
	if !mode.Valid() {
		return &txnError{op: "lock", txn: t.id, err: txnlock.ErrInvalidMode}
	}
	if err := t.db.checkCF("lock", t.id, cf); err != nil {
		return err
	}
	return t.send(ctx, cf, txnlock.Point(key), mode)
}

// LockRange locks every key of r in cf, present or absent, in mode, so that
// no other transaction can write (Exclusive) or lock any key in r until this
// one ends. It needs Options.RangeLocking unless r is a single key
// (txnlock.ErrRangeNotSupported otherwise). A range is not sent again if a
// held range lock of a covering mode contains it.
func (t *Txn) LockRange(ctx context.Context, cf txnlock.ColumnFamily, r txnlock.Range, mode txnlock.Mode) error {
	if err := t.check("lock range"); err != nil {
		return err
	}
	if !r.Valid() {
		return &txnError{op: "lock range", txn: t.id, err: txnlock.ErrInvalidRange}
	}
	if k, ok := r.PointKey(); ok {
		return t.Lock(ctx, cf, k, mode)
	}
	if !mode.Valid() {
		return &txnError{op: "lock range", txn: t.id, err: txnlock.ErrInvalidMode}
	}
	if !t.db.opts.RangeLocking {
		return &txnError{op: "lock range", txn: t.id, err: txnlock.ErrRangeNotSupported}
	}
	if err := t.db.checkCF("lock range", t.id, cf); err != nil {
		return err
	}
	return t.send(ctx, cf, r, mode)
}

// Unlock releases the point lock on key in cf before the transaction ends,
// for locks whose scope is shorter than the transaction (an AUTO-INC table
// lock held to the end of a statement). Releasing a lock that protects a
// write the transaction made breaks two-phase locking: do not. ErrNotHeld
// (from the manager) if the transaction holds no such point lock.
func (t *Txn) Unlock(cf txnlock.ColumnFamily, key []byte) error {
	if err := t.check("unlock"); err != nil {
		return err
	}
	if err := t.db.checkCF("unlock", t.id, cf); err != nil {
		return err
	}
	return t.h.Unlock(t.db.opts.Manager, cf, txnlock.Point(key))
}

// send makes one lock request through the transaction's handle, which
// sends nothing if a held lock covers it. On a closed DB it fails with
// ErrClosed: Close released the handle (a wait in progress then fails),
// or, if the DB closed just as the request was granted, send releases it.
func (t *Txn) send(ctx context.Context, cf txnlock.ColumnFamily, r txnlock.Range, mode txnlock.Mode) error {
	if t.db.isClosed() {
		return &txnError{op: "lock", txn: t.id, err: ErrClosed}
	}
	err := t.h.Lock(ctx, t.db.opts.Manager, txnlock.Request{CF: cf, Range: r, Mode: mode, Timeout: t.timeout})
	if err != nil {
		if errors.Is(err, txnlock.ErrTxnReleased) && t.db.isClosed() {
			return &txnError{op: "lock", txn: t.id, err: ErrClosed}
		}
		return err
	}
	if t.db.isClosed() {
		_ = t.h.Release() // Close may not have reached this transaction yet
		return &txnError{op: "lock", txn: t.id, err: ErrClosed}
	}
	return nil
}
