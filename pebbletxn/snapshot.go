package pebbletxn

import (
	"errors"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// Snapshot is a consistent, read-only view of the committed data at one
// moment: every committed transaction is either wholly in it or wholly
// absent. It takes no locks. Close it when done, before the Pebble DB is
// closed; a read after the Pebble DB closed fails with a *StorageError
// wrapping pebble.ErrClosed. Safe for concurrent use.
type Snapshot struct {
	db     *DB
	snap   *pebble.Snapshot
	closed atomic.Bool
}

// NewSnapshot returns a view of the data committed so far.
func (db *DB) NewSnapshot() (_ *Snapshot, err error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if err := db.checkOpenLocked("new snapshot", 0); err != nil {
		return nil, err
	}
	defer db.recoverPebble("new snapshot", 0, &err)
	return &Snapshot{db: db, snap: db.pdb.NewSnapshot()}, nil
}

// check fails a call on a closed snapshot.
func (s *Snapshot) check(op string) error {
	if s.closed.Load() {
		return &txnError{op: op, err: ErrClosed}
	}
	return nil
}

// Get returns the value of key in cf in the snapshot.
func (s *Snapshot) Get(cf txnlock.ColumnFamily, key []byte) (value []byte, found bool, err error) {
	if err := s.check("snapshot get"); err != nil {
		return nil, false, err
	}
	if err := s.db.checkCF("snapshot get", 0, cf); err != nil {
		return nil, false, err
	}
	defer s.db.recoverPebble("snapshot get", 0, &err)
	v, closer, err := s.snap.Get(appendKey(nil, cf, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageErr("snapshot get", 0, err)
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// Scan calls fn for every key of r in cf in ascending order until fn
// returns false. key and value are valid only during the call.
func (s *Snapshot) Scan(cf txnlock.ColumnFamily, r txnlock.Range, fn func(key, value []byte) bool) (err error) {
	if err := s.check("snapshot scan"); err != nil {
		return err
	}
	if !r.Valid() {
		return &txnError{op: "snapshot scan", err: txnlock.ErrInvalidRange}
	}
	if err := s.db.checkCF("snapshot scan", 0, cf); err != nil {
		return err
	}
	defer s.db.recoverPebble("snapshot scan", 0, &err)
	lower, upper := bounds(cf, r)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return storageErr("snapshot scan", 0, err)
	}
	return storageErr("snapshot scan", 0, iterate(it, fn))
}

// Close releases the snapshot. A second Close returns ErrClosed.
func (s *Snapshot) Close() (err error) {
	if s.closed.Swap(true) {
		return &txnError{op: "close snapshot", err: ErrClosed}
	}
	defer s.db.recoverPebble("close snapshot", 0, &err)
	return storageErr("close snapshot", 0, s.snap.Close())
}

// Last returns the greatest key of r in cf and its value, if any.
func (s *Snapshot) Last(cf txnlock.ColumnFamily, r txnlock.Range) (key, value []byte, found bool, err error) {
	if err := s.check("snapshot last"); err != nil {
		return nil, nil, false, err
	}
	if !r.Valid() {
		return nil, nil, false, &txnError{op: "snapshot last", err: txnlock.ErrInvalidRange}
	}
	if err := s.db.checkCF("snapshot last", 0, cf); err != nil {
		return nil, nil, false, err
	}
	defer s.db.recoverPebble("snapshot last", 0, &err)
	lower, upper := bounds(cf, r)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, nil, false, storageErr("snapshot last", 0, err)
	}
	if it.Last() {
		key = append([]byte(nil), it.Key()[prefixLen:]...)
		value = append([]byte(nil), it.Value()...)
		found = true
	}
	return key, value, found, storageErr("snapshot last", 0, it.Close())
}
