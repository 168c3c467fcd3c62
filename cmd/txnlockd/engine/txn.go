package engine

import (
	"context"
	"errors"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pebbletxn"
)

// ReadLock is how a read locks what it reads.
type ReadLock uint8

// The read locks.
const (
	NoLock     ReadLock = iota // a consistent (read-committed) read
	ShareLock                  // FOR SHARE, LOCK IN SHARE MODE
	UpdateLock                 // FOR UPDATE, and the reads of UPDATE and DELETE
)

func (l ReadLock) mode() txnlock.Mode {
	if l == ShareLock {
		return txnlock.Shared
	}
	return txnlock.Exclusive
}

// Txn is one transaction. Not safe for concurrent use.
//
// Every statement takes all of its locks before it writes, so a statement
// that fails (a lock wait timeout, a deadlock, a duplicate key) leaves the
// transaction's writes as they were before it.
type Txn struct {
	e *Engine
	t *pebbletxn.Txn
}

// Begin starts a transaction whose lock requests wait at most lockTimeout
// (0: the engine's).
func (e *Engine) Begin(lockTimeout time.Duration) (*Txn, error) {
	t, err := e.tdb.Begin(&pebbletxn.TxnOptions{LockTimeout: lockTimeout})
	if err != nil {
		return nil, errStorage("BEGIN", err)
	}
	return &Txn{e: e, t: t}, nil
}

// ID is the transaction's id in the lock manager.
func (x *Txn) ID() txnlock.TxnID { return x.t.ID() }

// LockRequests is the number of lock requests sent so far.
func (x *Txn) LockRequests() int { return x.t.LockRequests() }

// SetLockTimeout sets the timeout of later lock requests (txnlock.NoWait:
// fail at once).
func (x *Txn) SetLockTimeout(d time.Duration) error { return x.t.SetLockTimeout(d) }

// Commit applies the writes atomically and releases the locks.
func (x *Txn) Commit() error { return x.t.Commit() }

// Rollback discards the writes and releases the locks.
func (x *Txn) Rollback() error { return x.t.Rollback() }

// Get reads the row at key. With a lock, the row key is locked first,
// whether or not the row exists (so an INSERT of that key waits).
func (x *Txn) Get(ctx context.Context, t *Table, key int64, lock ReadLock) ([]Value, bool, error) {
	k := rowKey(t.ID, key)
	if lock != NoLock {
		if err := x.t.Lock(ctx, t.rt.rowCF, k, lock.mode()); err != nil {
			return nil, false, err
		}
	}
	v, found, err := x.t.Get(t.rt.rowCF, k)
	if err != nil || !found {
		return nil, false, err
	}
	row, err := decodeRow(v, len(t.Columns))
	return row, err == nil, err
}

// KeyRange is the row keys [lo, hi] of t; AllKeys every row key.
func KeyRange(t *Table, lo, hi int64) (txnlock.Range, error) { return keyRange(t.ID, lo, hi) }

// AllKeys is the range of every row key of t.
func AllKeys(t *Table) txnlock.Range { return txnlock.Prefix(tablePrefix(t.ID, 'p')) }

// Scan reads the rows with keys in r, in key order, until fn returns
// false. With a lock, range locking locks r itself first, gaps included
// (an INSERT into r waits); point locking locks each row found.
func (x *Txn) Scan(ctx context.Context, t *Table, r txnlock.Range, lock ReadLock, fn func(key int64, row []Value) bool) error {
	var derr error
	visit := func(k, v []byte) bool {
		var row []Value
		row, derr = decodeRow(v, len(t.Columns))
		return derr == nil && fn(readInt(k[6:]), row)
	}
	var err error
	if lock == NoLock {
		err = x.t.Scan(t.rt.rowCF, r, visit)
	} else {
		err = x.t.ScanForUpdate(ctx, t.rt.rowCF, r, lock.mode(), visit)
	}
	return errors.Join(err, derr)
}

// ScanIndex reads the rows whose first indexed value of ix is in [lo, hi],
// in index order, until fn returns false. With a lock, range locking locks
// that range of index entries first (gaps included), then each row key;
// point locking locks each row key found.
func (x *Txn) ScanIndex(ctx context.Context, t *Table, ix *Index, lo, hi Value, lock ReadLock, fn func(key int64, row []Value) bool) error {
	r, err := indexRange(t, ix, lo, hi)
	if err != nil {
		return nil // an empty interval
	}
	if lock != NoLock && x.e.opts.Lock == LockRange {
		if err := x.t.LockRange(ctx, ix.cf, r, lock.mode()); err != nil {
			return err
		}
	}
	var keys []int64
	if err := x.t.Scan(ix.cf, r, func(k, _ []byte) bool {
		keys = append(keys, readInt(k[len(k)-8:]))
		return true
	}); err != nil {
		return err
	}
	for _, key := range keys {
		row, found, err := x.Get(ctx, t, key, lock)
		if err != nil {
			return err
		}
		if found && !fn(key, row) {
			return nil
		}
	}
	return nil
}

// Change is one row an UPDATE or DELETE changes: its key, the row as read
// (under the row's exclusive lock), and for an UPDATE the new row.
type Change struct {
	Key      int64
	Old, New []Value
}

// Update writes the changes (each Old read under UpdateLock, each New
// checked by CheckRow). The clustered key must not change. Index entries
// whose values change are locked first (range, point-sk), old and new, for
// every change, then every row is written.
func (x *Txn) Update(ctx context.Context, t *Table, changes []Change) error {
	if x.e.opts.Lock.locksIndex() {
		for _, c := range changes {
			for i := range t.Indexes {
				ix := &t.Indexes[i]
				if !indexChanged(ix, c.Old, c.New) {
					continue
				}
				if err := x.t.Lock(ctx, ix.cf, indexKey(t, ix, c.Old, c.Key), txnlock.Exclusive); err != nil {
					return err
				}
				if err := x.t.Lock(ctx, ix.cf, indexKey(t, ix, c.New, c.Key), txnlock.Exclusive); err != nil {
					return err
				}
			}
		}
	}
	var buf []byte
	for _, c := range changes {
		buf = encodeRow(buf[:0], c.New)
		if err := x.t.PutUntracked(t.rt.rowCF, rowKey(t.ID, c.Key), buf); err != nil {
			return err
		}
		for i := range t.Indexes {
			ix := &t.Indexes[i]
			if !indexChanged(ix, c.Old, c.New) {
				continue
			}
			if err := x.t.DeleteUntracked(ix.cf, indexKey(t, ix, c.Old, c.Key)); err != nil {
				return err
			}
			if err := x.t.PutUntracked(ix.cf, indexKey(t, ix, c.New, c.Key), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func indexChanged(ix *Index, a, b []Value) bool {
	for _, c := range ix.Cols {
		if a[c] != b[c] {
			return true
		}
	}
	return false
}

// Delete removes the rows (each read under UpdateLock): their index
// entries are locked first (range, point-sk), then everything is deleted.
func (x *Txn) Delete(ctx context.Context, t *Table, changes []Change) error {
	if x.e.opts.Lock.locksIndex() {
		for _, c := range changes {
			for i := range t.Indexes {
				ix := &t.Indexes[i]
				if err := x.t.Lock(ctx, ix.cf, indexKey(t, ix, c.Old, c.Key), txnlock.Exclusive); err != nil {
					return err
				}
			}
		}
	}
	for _, c := range changes {
		if err := x.t.DeleteUntracked(t.rt.rowCF, rowKey(t.ID, c.Key)); err != nil {
			return err
		}
		for i := range t.Indexes {
			ix := &t.Indexes[i]
			if err := x.t.DeleteUntracked(ix.cf, indexKey(t, ix, c.Old, c.Key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckRow checks a row against the column definitions: NOT NULL, string
// lengths (in characters), integer columns holding integers.
func CheckRow(t *Table, row []Value) error {
	coerce(t, row)
	for i, c := range t.Columns {
		if row[i].K == Null && c.NotNull {
			return ErrNotNull(c.Name)
		}
		if !c.Int && c.MaxLen > 0 && row[i].K == Str && len(row[i].S) > c.MaxLen && runeCount(row[i].S) > c.MaxLen {
			return ErrDataTooLong(c.Name)
		}
	}
	return nil
}

// coerce converts each value to its column's kind, as MySQL stores '5'
// into an INT column as 5.
func coerce(t *Table, row []Value) {
	for i, c := range t.Columns {
		switch v := row[i]; {
		case v.K == Null:
		case c.Int && v.K != Int:
			n, _ := v.AsInt()
			row[i] = IntValue(n)
		case !c.Int && v.K != Str:
			row[i] = StrValue(v.String())
		}
	}
}

func runeCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}

// Insert writes new rows (complete, in column order; checked by CheckRow
// once their ids are given). An
// AUTO_INCREMENT column holding NULL or 0 gets the next id, allocated as
// Options.AutoIncMode says (mode 0 holds the table's AUTO-INC lock in the
// manager to the end of the statement); a table without a clustered key
// column gets hidden row ids. Every row key is then locked exclusively
// and checked absent (a duplicate fails the statement, writing nothing),
// the new index entries are locked (range, point-sk), and the rows are
// written. It returns the first id generated (0 if none), as
// LAST_INSERT_ID().
func (x *Txn) Insert(ctx context.Context, t *Table, rows [][]Value) (int64, error) {
	for _, row := range rows {
		coerce(t, row)
	}
	keys, first, err := x.assignKeys(ctx, t, rows)
	if err != nil {
		return 0, err
	}
	for _, row := range rows {
		if err := CheckRow(t, row); err != nil {
			return 0, err
		}
	}
	for i, key := range keys {
		for j := 0; j < i; j++ {
			if keys[j] == key {
				return 0, ErrDupEntry(key)
			}
		}
		_, found, err := x.Get(ctx, t, key, UpdateLock)
		if err != nil {
			return 0, err
		}
		if found {
			return 0, ErrDupEntry(key)
		}
	}
	if x.e.opts.Lock.locksIndex() {
		for i, row := range rows {
			for j := range t.Indexes {
				ix := &t.Indexes[j]
				if err := x.t.Lock(ctx, ix.cf, indexKey(t, ix, row, keys[i]), txnlock.Exclusive); err != nil {
					return 0, err
				}
			}
		}
	}
	var buf []byte
	for i, row := range rows {
		buf = encodeRow(buf[:0], row)
		if err := x.t.PutUntracked(t.rt.rowCF, rowKey(t.ID, keys[i]), buf); err != nil {
			return 0, err
		}
		for j := range t.Indexes {
			ix := &t.Indexes[j]
			if err := x.t.PutUntracked(ix.cf, indexKey(t, ix, row, keys[i]), nil); err != nil {
				return 0, err
			}
		}
	}
	return first, nil
}

// assignKeys gives each row its clustered key, allocating ids.
func (x *Txn) assignKeys(ctx context.Context, t *Table, rows [][]Value) (keys []int64, first int64, err error) {
	keys = make([]int64, len(rows))
	rt := t.rt
	if t.Key < 0 { // hidden row ids, like InnoDB's DB_ROW_ID: no lock
		for i := range rows {
			keys[i] = rt.last.Add(1)
		}
		return keys, 0, nil
	}
	ai := t.AutoIncColumn()
	need := 0
	for _, row := range rows {
		if ai >= 0 && (row[ai].K == Null || row[ai].K == Int && row[ai].I == 0) {
			need++
		}
	}
	var next int64 // the first of need consecutive ids (modes 0, 1)
	switch {
	case need == 0:
	case x.e.opts.AutoIncMode == 0:
		k := autoIncKey(t.ID)
		if err := x.t.Lock(ctx, txnlock.DefaultColumnFamily, k, txnlock.Exclusive); err != nil {
			return nil, 0, err
		}
		defer x.t.Unlock(txnlock.DefaultColumnFamily, k)
		fallthrough
	case x.e.opts.AutoIncMode == 1:
		rt.aiMu.Lock()
		next = rt.last.Add(int64(need)) - int64(need) + 1
		rt.aiMu.Unlock()
	}
	for i, row := range rows {
		if ai >= 0 && (row[ai].K == Null || row[ai].K == Int && row[ai].I == 0) {
			id := next
			if x.e.opts.AutoIncMode == 2 {
				id = rt.last.Add(1)
			} else {
				next++
			}
			row[ai] = IntValue(id)
			if first == 0 {
				first = id
			}
		} else if ai >= 0 {
			bump(&rt.last, row[ai].I)
		}
		keys[i] = row[t.Key].I
	}
	return keys, first, nil
}

// bump raises the counter to at least v, as an explicit id does in MySQL.
func bump(c interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, v int64) {
	for {
		cur := c.Load()
		if v <= cur || c.CompareAndSwap(cur, v) {
			return
		}
	}
}
