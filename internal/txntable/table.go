// Package txntable is a TxnID → *R map split into stripes, each with its own
// mutex, so that per-transaction bookkeeping never funnels every request of
// a lock manager through one global lock.
//
// A manager keeps one record per live transaction (what it holds) and reaches
// it with Table.Stripe(txn): the caller locks the stripe's Mu, reads or
// changes the record, and unlocks. Records of different transactions in one
// stripe share the mutex; nothing else does.
//
//	Stripe(txn) ──▶ stripe i: Mu ─ guards ─▶ map[TxnID]*R
//
// Lock order: a manager that also locks its own structures (stripes, trees)
// takes those first and a txntable stripe last; two txntable stripes are
// never held at once.
package txntable

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/latch"
)

// Table maps transaction ids to records of type R. Safe for concurrent use
// through the stripes' mutexes.
type Table[R any] struct {
	stripes []Stripe[R]
	shift   uint // 64 - log2(len(stripes))
}

// Stripe is one shard of a Table.
type Stripe[R any] struct {
	// Mu guards m and every field of the records it holds that the owning
	// manager declares "guarded by the transaction stripe".
	Mu latch.Mutex
	m  map[txnlock.TxnID]*R
	// last caches the most recently used record: a transaction usually
	// makes several calls in a row, and this skips the map lookup.
	lastID txnlock.TxnID
	last   *R
	// free holds records handed back by RecycleLocked, for
	// GetOrCreateLocked: a manager whose transactions come and go does not
	// allocate a record for each.
	free []*R
	// Pads the stripe to 128 bytes (TestStripeSize), so that neighbouring
	// stripes' mutexes never share a cache-line pair.
	_ [64]byte
}

// maxFree bounds a stripe's free list.
const maxFree = 64

// New returns a table with n stripes; n is rounded up to a power of two (at
// least 1).
func New[R any](n int) *Table[R] {
	bits := uint(0)
	for 1<<bits < n {
		bits++
	}
	t := &Table[R]{stripes: make([]Stripe[R], 1<<bits), shift: 64 - bits}
	for i := range t.stripes {
		t.stripes[i].m = make(map[txnlock.TxnID]*R)
	}
	return t
}

// Stripe returns the stripe that holds id's record. Ids are spread by a
// Fibonacci hash, so consecutive ids land in different stripes.
func (t *Table[R]) Stripe(id txnlock.TxnID) *Stripe[R] {
	if t.shift == 64 {
		return &t.stripes[0]
	}
	return &t.stripes[(uint64(id)*0x9e3779b97f4a7c15)>>t.shift]
}

// Len is the number of stripes.
func (t *Table[R]) Len() int { return len(t.stripes) }

// At returns stripe i, for walks over the whole table (status, close).
func (t *Table[R]) At(i int) *Stripe[R] { return &t.stripes[i] }

// GetLocked returns id's record or nil. Mu must be held.
func (s *Stripe[R]) GetLocked(id txnlock.TxnID) *R {
	if id == s.lastID && s.last != nil {
		return s.last
	}
	r := s.m[id]
	if r != nil {
		s.lastID, s.last = id, r
	}
	return r
}

// GetOrCreateLocked returns id's record, creating one if there is none;
// created reports which. A created record is zero, or one that
// RecycleLocked took back in the state its caller reset it to. Mu must be
// held.
func (s *Stripe[R]) GetOrCreateLocked(id txnlock.TxnID) (r *R, created bool) {
	if r = s.GetLocked(id); r != nil {
		return r, false
	}
	if n := len(s.free); n > 0 {
		r = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	} else {
		r = new(R)
	}
	s.m[id] = r
	s.lastID, s.last = id, r
	return r, true
}

// DeleteLocked forgets id's record. Mu must be held.
func (s *Stripe[R]) DeleteLocked(id txnlock.TxnID) {
	delete(s.m, id)
	if s.lastID == id {
		s.lastID, s.last = 0, nil
	}
}

// RecycleLocked takes back r, a record just deleted and reset by its
// caller (which may keep buffers in it), for a later GetOrCreateLocked.
// Nobody may use r afterwards. Mu must be held.
func (s *Stripe[R]) RecycleLocked(r *R) {
	if len(s.free) < maxFree {
		s.free = append(s.free, r)
	}
}

// LenLocked is the number of records in the stripe. Mu must be held.
func (s *Stripe[R]) LenLocked() int { return len(s.m) }

// ClearLocked forgets every record of the stripe. Mu must be held.
func (s *Stripe[R]) ClearLocked() {
	clear(s.m)
	s.lastID, s.last = 0, nil
	s.free = nil
}

// AllLocked calls f for each record of the stripe until f returns false.
// Mu must be held.
func (s *Stripe[R]) AllLocked(f func(txnlock.TxnID, *R) bool) {
	for id, r := range s.m {
		if !f(id, r) {
			return
		}
	}
}
