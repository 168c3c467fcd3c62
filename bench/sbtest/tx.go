package sbtest

import (
	"context"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pebbletxn"
)

// Tx is one transaction on the tables. Not safe for concurrent use.
//
// Every statement takes all of its locks before it writes anything, so a
// statement that fails (a lock timeout, a deadlock, bad input) leaves the
// transaction's writes as they were before it; the transaction stays open
// and the caller commits or rolls back. After a deadlock or lock timeout,
// roll back (as MySQL does).
type Tx struct {
	db  *DB
	txn *pebbletxn.Txn
	err error // Begin's failure, returned by every call
	// lockTime is the time spent in lock calls, with Options.TimeLocks.
	lockTime time.Duration
}

// Begin starts a transaction. On a closed DB the Tx fails every call with
// ErrClosed.
func (db *DB) Begin() *Tx {
	tx := &Tx{db: db}
	if db.closed.Load() {
		tx.err = &opError{op: "begin", err: ErrClosed}
		return tx
	}
	tx.txn, tx.err = db.tdb.Begin(nil)
	return tx
}

// ID is the transaction id in the lock manager (0 if Begin failed).
func (tx *Tx) ID() txnlock.TxnID {
	if tx.txn == nil {
		return 0
	}
	return tx.txn.ID()
}

// LockRequests is the number of lock requests sent to the manager so far by
// this transaction (locks held already in a covering mode are not re-sent).
func (tx *Tx) LockRequests() int {
	if tx.txn == nil {
		return 0
	}
	return tx.txn.LockRequests()
}

// LockTime is the time the transaction has spent inside its lock calls
// so far (waits included), if the DB was opened with Options.TimeLocks;
// else 0.
func (tx *Tx) LockTime() time.Duration { return tx.lockTime }

// lock locks key in cf through the transaction, timing the call under
// Options.TimeLocks.
func (tx *Tx) lock(ctx context.Context, cf txnlock.ColumnFamily, key []byte, mode txnlock.Mode) error {
	if !tx.db.opts.TimeLocks {
		return tx.txn.Lock(ctx, cf, key, mode)
	}
	t0 := time.Now()
	err := tx.txn.Lock(ctx, cf, key, mode)
	tx.lockTime += time.Since(t0)
	return err
}

// Commit applies the transaction's writes atomically and releases its
// locks.
func (tx *Tx) Commit() error {
	if tx.err != nil {
		return tx.err
	}
	return tx.txn.Commit()
}

// Rollback discards the writes and releases the locks.
func (tx *Tx) Rollback() error {
	if tx.err != nil {
		return tx.err
	}
	return tx.txn.Rollback()
}

// start checks the transaction and resolves the table.
func (tx *Tx) start(n int) (*table, error) {
	if tx.err != nil {
		return nil, tx.err
	}
	return tx.db.table(n)
}

// lockTable takes the table lock in LockTable mode (once per transaction:
// pebbletxn does not re-send it).
func (tx *Tx) lockTable(ctx context.Context, t *table) error {
	if tx.db.opts.Lock != LockTable {
		return nil
	}
	return tx.lock(ctx, tx.db.lockCF, t.tableKey, txnlock.Exclusive)
}

// lockRow locks the PK entry of id in mode under row locking (point, range,
// point-sk), the table under table locking, nothing under none.
func (tx *Tx) lockRow(ctx context.Context, t *table, pk []byte, mode txnlock.Mode) error {
	switch l := tx.db.opts.Lock; {
	case l.LocksRows():
		return tx.lock(ctx, t.pk, pk, mode)
	case l == LockTable:
		return tx.lockTable(ctx, t)
	}
	return nil
}

// lockSK locks a secondary-key entry about to be written, under range
// locking and LockPointSK only: as MyRocks, point locking writes SK entries
// untracked (the PK lock guards the row); range locking locks them as
// single-key ranges, LockPointSK as point locks.
func (tx *Tx) lockSK(ctx context.Context, t *table, sk []byte) error {
	if !tx.db.opts.Lock.LocksSK() || !t.hasSK {
		return nil
	}
	return tx.lock(ctx, t.sk, sk, txnlock.Exclusive)
}

// readRow reads row id as the transaction sees it.
func (tx *Tx) readRow(t *table, pk []byte, id int64) (Row, bool, error) {
	v, found, err := tx.txn.Get(t.pk, pk)
	if err != nil || !found {
		return Row{}, false, err
	}
	r, err := decodeRow(id, v)
	return r, err == nil, err
}

// PointSelect is SELECT ... WHERE id=?: no lock (table locking: the table
// lock).
func (tx *Tx) PointSelect(ctx context.Context, table int, id int64) (Row, bool, error) {
	t, err := tx.start(table)
	if err != nil {
		return Row{}, false, err
	}
	if err := tx.lockTable(ctx, t); err != nil {
		return Row{}, false, err
	}
	return tx.readRow(t, pkKey(t.pkPrefix, id), id)
}

// SelectForUpdate is SELECT ... WHERE id=? FOR UPDATE: an exclusive lock on
// the PK entry, taken whether or not the row exists.
func (tx *Tx) SelectForUpdate(ctx context.Context, table int, id int64) (Row, bool, error) {
	return tx.lockingSelect(ctx, table, id, txnlock.Exclusive)
}

// SelectForShare is SELECT ... WHERE id=? FOR SHARE: a shared lock on the
// PK entry (table locking: the exclusive table lock).
func (tx *Tx) SelectForShare(ctx context.Context, table int, id int64) (Row, bool, error) {
	return tx.lockingSelect(ctx, table, id, txnlock.Shared)
}

func (tx *Tx) lockingSelect(ctx context.Context, table int, id int64, mode txnlock.Mode) (Row, bool, error) {
	t, err := tx.start(table)
	if err != nil {
		return Row{}, false, err
	}
	pk := pkKey(t.pkPrefix, id)
	if err := tx.lockRow(ctx, t, pk, mode); err != nil {
		return Row{}, false, err
	}
	return tx.readRow(t, pk, id)
}

// lockForWrite locks row id exclusively and reads it.
func (tx *Tx) lockForWrite(ctx context.Context, table int, id int64) (*table, []byte, Row, bool, error) {
	t, err := tx.start(table)
	if err != nil {
		return nil, nil, Row{}, false, err
	}
	pk := pkKey(t.pkPrefix, id)
	if err := tx.lockRow(ctx, t, pk, txnlock.Exclusive); err != nil {
		return nil, nil, Row{}, false, err
	}
	r, found, err := tx.readRow(t, pk, id)
	return t, pk, r, found, err
}

// UpdateIndex is UPDATE ... SET k=k+1 WHERE id=?: it moves the SK entry
// from (k, id) to (k+1, id). It returns the rows affected (0 or 1).
func (tx *Tx) UpdateIndex(ctx context.Context, table int, id int64) (int, error) {
	return tx.UpdateIndexBy(ctx, table, id, 1)
}

// UpdateIndexBy is UPDATE ... SET k=k+delta WHERE id=?, locked as
// UpdateIndex (with a delta of 0 the old and new SK entries are one, locked
// once and left in place). It returns the rows affected.
func (tx *Tx) UpdateIndexBy(ctx context.Context, table int, id, delta int64) (int, error) {
	t, pk, r, found, err := tx.lockForWrite(ctx, table, id)
	if err != nil || !found {
		return 0, err
	}
	var oldSK, newSK []byte
	if t.hasSK {
		oldSK, newSK = skKey(t.skPrefix, r.K, id), skKey(t.skPrefix, r.K+delta, id)
		if err := tx.lockSK(ctx, t, oldSK); err != nil {
			return 0, err
		}
		if err := tx.lockSK(ctx, t, newSK); err != nil {
			return 0, err
		}
	}
	r.K += delta
	if err := tx.txn.PutUntracked(t.pk, pk, encodeRow(r)); err != nil {
		return 0, err
	}
	if t.hasSK && delta != 0 {
		if err := tx.txn.DeleteUntracked(t.sk, oldSK); err != nil {
			return 0, err
		}
		if err := tx.txn.PutUntracked(t.sk, newSK, nil); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// UpdateNonIndex is UPDATE ... SET c=? WHERE id=?; no SK work. It returns
// the rows affected.
func (tx *Tx) UpdateNonIndex(ctx context.Context, table int, id int64, c string) (int, error) {
	if tx.err != nil {
		return 0, tx.err
	}
	if len(c) > MaxC {
		return 0, &opError{op: fmt.Sprintf("update sbtest%d id %d", table, id), err: fmt.Errorf("%w: c has %d bytes (max %d)", ErrValueTooLong, len(c), MaxC)}
	}
	t, pk, r, found, err := tx.lockForWrite(ctx, table, id)
	if err != nil || !found {
		return 0, err
	}
	r.C = c
	if err := tx.txn.PutUntracked(t.pk, pk, encodeRow(r)); err != nil {
		return 0, err
	}
	return 1, nil
}

// Delete is DELETE ... WHERE id=?. It returns the rows affected.
func (tx *Tx) Delete(ctx context.Context, table int, id int64) (int, error) {
	t, pk, r, found, err := tx.lockForWrite(ctx, table, id)
	if err != nil || !found {
		return 0, err
	}
	var sk []byte
	if t.hasSK {
		sk = skKey(t.skPrefix, r.K, id)
		if err := tx.lockSK(ctx, t, sk); err != nil {
			return 0, err
		}
	}
	if err := tx.txn.DeleteUntracked(t.pk, pk); err != nil {
		return 0, err
	}
	if t.hasSK {
		if err := tx.txn.DeleteUntracked(t.sk, sk); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

// Insert is INSERT ... VALUES (id, k, c, pad). The PK entry is locked
// exclusively first (so the duplicate check stays true); an existing id is
// ErrDuplicateKey and changes nothing.
func (tx *Tx) Insert(ctx context.Context, table int, r Row) error {
	if tx.err != nil {
		return tx.err
	}
	if err := checkLengths(fmt.Sprintf("insert sbtest%d id %d", table, r.ID), r); err != nil {
		return err
	}
	t, pk, _, found, err := tx.lockForWrite(ctx, table, r.ID)
	if err != nil {
		return err
	}
	if found {
		return &opError{op: fmt.Sprintf("insert sbtest%d id %d", table, r.ID), err: ErrDuplicateKey}
	}
	return tx.insertLocked(ctx, t, pk, r)
}

// insertLocked writes a row whose PK entry the transaction has locked and
// found absent.
func (tx *Tx) insertLocked(ctx context.Context, t *table, pk []byte, r Row) error {
	var sk []byte
	if t.hasSK {
		sk = skKey(t.skPrefix, r.K, r.ID)
		if err := tx.lockSK(ctx, t, sk); err != nil {
			return err
		}
	}
	if err := tx.txn.PutUntracked(t.pk, pk, encodeRow(r)); err != nil {
		return err
	}
	if t.hasSK {
		return tx.txn.PutUntracked(t.sk, sk, nil)
	}
	return nil
}

// checkLengths fails op with ErrValueTooLong if r's c or pad is too long.
func checkLengths(op string, r Row) error {
	if len(r.C) > MaxC {
		return &opError{op: op, err: fmt.Errorf("%w: c has %d bytes (max %d)", ErrValueTooLong, len(r.C), MaxC)}
	}
	if len(r.Pad) > MaxPad {
		return &opError{op: op, err: fmt.Errorf("%w: pad has %d bytes (max %d)", ErrValueTooLong, len(r.Pad), MaxPad)}
	}
	return nil
}

// InsertAuto is INSERT ... (k, c, pad) VALUES (?, ?, ?) with an
// auto-increment id, allocated as Options.AutoIncMode says; it returns the
// id. In mode 0 the table's AUTO-INC lock is taken through the manager
// (exclusive, so its waits, timeouts and deadlocks are real) and released
// at the end of the statement, whatever the outcome. An id is consumed even
// if the statement fails (as InnoDB does: gaps are normal).
func (tx *Tx) InsertAuto(ctx context.Context, table int, k int64, c, pad string) (int64, error) {
	t, err := tx.start(table)
	if err != nil {
		return 0, err
	}
	r := Row{K: k, C: c, Pad: pad}
	if err := checkLengths(fmt.Sprintf("insert sbtest%d", table), r); err != nil {
		return 0, err
	}
	switch {
	case tx.db.opts.AutoIncMode == 0 && tx.db.opts.Lock != LockNone:
		if err := tx.lock(ctx, tx.db.lockCF, t.aiKey, txnlock.Exclusive); err != nil {
			return 0, err
		}
		defer tx.txn.Unlock(tx.db.lockCF, t.aiKey)
		fallthrough
	case tx.db.opts.AutoIncMode <= 1:
		t.aiMu.Lock()
		r.ID = t.aiNext
		t.aiNext++
		t.aiMu.Unlock()
	default:
		r.ID = t.aiAtomic.Add(1)
	}
	if err := tx.Insert(ctx, table, r); err != nil {
		return 0, err
	}
	return r.ID, nil
}

// RangeSelect is SELECT ... WHERE id BETWEEN lo AND hi [FOR UPDATE], rows
// in id order. Plain: no locks. FOR UPDATE: range locking locks [lo, hi]
// itself first (an insert into the range waits); point locking locks each
// row found (an insert into a gap proceeds: a phantom); table locking the
// table lock. lo > hi selects nothing.
func (tx *Tx) RangeSelect(ctx context.Context, table int, lo, hi int64, forUpdate bool) ([]Row, error) {
	t, err := tx.start(table)
	if err != nil {
		return nil, err
	}
	if lo > hi {
		return nil, nil
	}
	if err := tx.lockTable(ctx, t); err != nil {
		return nil, err
	}
	r, err := idRange(t.pkPrefix, lo, hi)
	if err != nil {
		return nil, err
	}
	var rows []Row
	var derr error
	collect := func(k, v []byte) bool {
		var row Row
		row, derr = decodeRow(readInt(k[len(t.pkPrefix):]), v)
		rows = append(rows, row)
		return derr == nil
	}
	if forUpdate && tx.db.opts.Lock.LocksRows() {
		err = tx.txn.ScanForUpdate(ctx, t.pk, r, txnlock.Exclusive, collect)
	} else {
		err = tx.txn.Scan(t.pk, r, collect)
	}
	if err == nil {
		err = derr
	}
	return rows, err
}
