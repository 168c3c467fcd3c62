package pebbletxn

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
)

// Snapshot is a consistent, read-only view of the committed data at one
// moment: every committed transaction is either wholly in it or wholly
// absent. It takes no locks. Close it when done, before the Pebble DB is
// closed. Safe for concurrent use.
type Snapshot struct {
	db   *DB
	snap *pebble.Snapshot
}

// NewSnapshot returns a view of the data committed so far.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	return &Snapshot{db: db, snap: db.pdb.NewSnapshot()}, nil
}

// Get returns the value of key in cf (nil: default) in the snapshot.
func (s *Snapshot) Get(cf *ColumnFamily, key []byte) (value []byte, found bool, err error) {
	if cf, err = s.db.resolve(cf); err != nil {
		return nil, false, err
	}
	v, closer, err := s.snap.Get(appendKey(nil, cf.prefix, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// Scan calls fn for every key of r in cf in ascending order until fn
// returns false. key and value are valid only during the call.
func (s *Snapshot) Scan(cf *ColumnFamily, r txnlock.Range, fn func(key, value []byte) bool) error {
	if !r.Valid() {
		return txnlock.ErrInvalidRange
	}
	cf, err := s.db.resolve(cf)
	if err != nil {
		return err
	}
	lower, upper := bounds(uint32(cf.id), r)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	return iterate(it, fn)
}

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.snap.Close() }

// Last returns the greatest key of r in cf and its value, if any.
func (s *Snapshot) Last(cf *ColumnFamily, r txnlock.Range) (key, value []byte, found bool, err error) {
	if !r.Valid() {
		return nil, nil, false, txnlock.ErrInvalidRange
	}
	if cf, err = s.db.resolve(cf); err != nil {
		return nil, nil, false, err
	}
	lower, upper := bounds(uint32(cf.id), r)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, nil, false, err
	}
	if it.Last() {
		key = append([]byte(nil), it.Key()[prefixLen:]...)
		value = append([]byte(nil), it.Value()...)
		found = true
	}
	return key, value, found, it.Close()
}
