package pebbletxn

import (
	"context"

	"github.com/txnlock/txnlock"
)

// lockKey names a point lock in a transaction's record.
type lockKey struct {
	cf  txnlock.ColumnFamily
	key string
}

// heldPoint is a point lock in a transaction's record: its key is
// keys[off:off+n] of the record.
type heldPoint struct {
	cf     txnlock.ColumnFamily
	mode   txnlock.Mode
	off, n uint32
}

func (p heldPoint) key(keys []byte) []byte { return keys[p.off : p.off+p.n] }

// maxScanned is how many point locks a record scans linearly before it
// indexes them in a map: a short transaction (a handful of rows and their
// index entries) allocates no map and copies its keys into one buffer.
const maxScanned = 16

// heldRange is a range lock in a transaction's record.
type heldRange struct {
	cf   txnlock.ColumnFamily
	r    txnlock.Range
	mode txnlock.Mode
}

// lockSet is a transaction's record of the locks it holds, so that a lock
// already held in a covering mode is not sent to the manager again. It is
// owned by the transaction's goroutine, and never copied once used (points
// and keys start in its own arrays).
type lockSet struct {
	points []heldPoint // in the order taken
	keys   []byte      // the points' keys, back to back
	// index maps a point to its place in points, once there are more
	// than maxScanned.
	index    map[lockKey]int
	ranges   []heldRange // few per transaction: scanned linearly
	requests int         // lock requests sent to the manager

	pointsBuf [8]heldPoint
	keysBuf   [256]byte
}

// find returns the place of key in cf in s.points, or -1.
func (s *lockSet) find(cf txnlock.ColumnFamily, key []byte) int {
	if s.index != nil {
		if i, ok := s.index[lockKey{cf, string(key)}]; ok {
			return i
		}
		return -1
	}
	for i, p := range s.points {
		if p.cf == cf && int(p.n) == len(key) && string(p.key(s.keys)) == string(key) {
			return i
		}
	}
	return -1
}

// covers reports whether the record holds key in cf in a mode covering mode,
// as a point lock or inside a range lock, and where key's point lock is in
// s.points (-1: none), for addPoint: one search serves both.
func (s *lockSet) covers(cf txnlock.ColumnFamily, key []byte, mode txnlock.Mode) (ok bool, at int) {
	at = s.find(cf, key)
	if at >= 0 && s.points[at].mode.Covers(mode) {
		return true, at
	}
	for _, h := range s.ranges {
		if h.cf == cf && h.mode.Covers(mode) && h.r.Contains(key) {
			return true, at
		}
	}
	return false, at
}

// addPoint records key in cf as held in mode (or stronger, if it was). at
// is where covers found key's point lock (-1: none); nothing may have
// changed the record since.
func (s *lockSet) addPoint(at int, cf txnlock.ColumnFamily, key []byte, mode txnlock.Mode) {
	if at >= 0 {
		s.points[at].mode = s.points[at].mode.Max(mode)
		return
	}
	if s.points == nil {
		s.points, s.keys = s.pointsBuf[:0], s.keysBuf[:0]
	}
	s.points = append(s.points, heldPoint{cf: cf, mode: mode, off: uint32(len(s.keys)), n: uint32(len(key))})
	s.keys = append(s.keys, key...)
	switch n := len(s.points); {
	case s.index != nil:
		s.index[lockKey{cf, string(key)}] = n - 1
	case n > maxScanned:
		s.index = make(map[lockKey]int, 2*n)
		for i, p := range s.points {
			s.index[lockKey{p.cf, string(p.key(s.keys))}] = i
		}
	}
}

// removePoint forgets key in cf (an early Unlock). The key's bytes stay
// in s.keys until the transaction ends.
func (s *lockSet) removePoint(cf txnlock.ColumnFamily, key []byte) {
	i := s.find(cf, key)
	if i < 0 {
		return
	}
	last := len(s.points) - 1
	if s.index != nil {
		delete(s.index, lockKey{cf, string(key)})
		if i != last {
			p := s.points[last]
			s.index[lockKey{p.cf, string(p.key(s.keys))}] = i
		}
	}
	s.points[i] = s.points[last]
	s.points = s.points[:last]
}

// Lock locks key in cf (nil: the default column family) in mode, unless the
// transaction already holds it in a covering mode (then no request is sent).
// The lock is held until Commit or Rollback. Errors are the manager's
// (*txnlock.LockError: ErrLockTimeout, ErrDeadlock, ...), ErrTxnDone or
// ErrClosed; after a lock error the transaction is still active and the
// caller decides (usually Rollback).
func (t *Txn) Lock(ctx context.Context, cf *ColumnFamily, key []byte, mode txnlock.Mode) error {
	if err := t.check("lock"); err != nil {
		return err
	}
	if !mode.Valid() {
		return &txnError{op: "lock", txn: t.id, err: txnlock.ErrInvalidMode}
	}
	cf, err := t.db.resolve(cf)
	if err != nil {
		return err
	}
	covered, at := t.locks.covers(cf.id, key, mode)
	if covered {
		return nil
	}
	if err := t.send(ctx, cf, txnlock.Point(key), mode); err != nil {
		return err
	}
	t.locks.addPoint(at, cf.id, key, mode)
	return nil
}

// LockRange locks every key of r in cf, present or absent, in mode, so that
// no other transaction can write (Exclusive) or lock any key in r until this
// one ends. It needs Options.RangeLocking unless r is a single key
// (txnlock.ErrRangeNotSupported otherwise). A range is not sent again if a
// held range lock of a covering mode contains it.
func (t *Txn) LockRange(ctx context.Context, cf *ColumnFamily, r txnlock.Range, mode txnlock.Mode) error {
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
	cf, err := t.db.resolve(cf)
	if err != nil {
		return err
	}
	for _, h := range t.locks.ranges {
		if h.cf == cf.id && h.mode.Covers(mode) && h.r.Covers(r) {
			return nil
		}
	}
	if err := t.send(ctx, cf, r, mode); err != nil {
		return err
	}
	t.locks.ranges = append(t.locks.ranges, heldRange{cf: cf.id, r: r.Clone(), mode: mode})
	return nil
}

// Unlock releases the point lock on key in cf before the transaction ends,
// for locks whose scope is shorter than the transaction (an AUTO-INC table
// lock held to the end of a statement). Releasing a lock that protects a
// write the transaction made breaks two-phase locking: do not. ErrNotHeld
// (from the manager) if the transaction holds no such point lock.
func (t *Txn) Unlock(cf *ColumnFamily, key []byte) error {
	if err := t.check("unlock"); err != nil {
		return err
	}
	cf, err := t.db.resolve(cf)
	if err != nil {
		return err
	}
	if err := t.db.opts.Manager.Unlock(t.id, cf.id, txnlock.Point(key)); err != nil {
		return err
	}
	t.locks.removePoint(cf.id, key)
	return nil
}

// send makes one lock request. If the DB was closed while it waited, the
// transaction's locks are released and ErrClosed returned.
func (t *Txn) send(ctx context.Context, cf *ColumnFamily, r txnlock.Range, mode txnlock.Mode) error {
	if t.db.isClosed() {
		return &txnError{op: "lock", txn: t.id, err: ErrClosed}
	}
	t.locks.requests++
	err := t.db.opts.Manager.Lock(ctx, txnlock.Request{Txn: t.id, CF: cf.id, Range: r, Mode: mode, Timeout: t.timeout})
	if err != nil {
		return err
	}
	if t.db.isClosed() {
		// Close released this transaction's locks before the grant.
		_ = t.db.opts.Manager.UnlockAll(t.id)
		return &txnError{op: "lock", txn: t.id, err: ErrClosed}
	}
	return nil
}
