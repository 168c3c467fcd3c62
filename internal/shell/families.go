// Package shell is what the two lock managers share around the lock table
// core (internal/locktable): the registry of column families, the
// transactions' records of what they hold, the attachment to the deadlock
// detector, and the calls that add, drop and close (Shell). A manager
// embeds a Shell and keeps its own latches, lock tables and waits.
package shell

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/txnlock/txnlock"
)

// Families is a manager's registry of column families, of type F: an
// immutable table replaced whole (copy on write), so that a request finds
// its family with one atomic load. Each family has an index, stable while
// it is registered, that a hold keeps (locktable.Holder.Home) to find its
// family again.
type Families[F any] struct {
	// Mu serializes Add, Remove, Close and Stats; it comes before every
	// latch of the manager in the lock order.
	Mu sync.Mutex
	// Retired is the counters of the dropped column families; guarded
	// by Mu.
	Retired txnlock.Stats
	tab     atomic.Pointer[famTable[F]]
}

type famTable[F any] struct {
	def   *F
	byID  map[txnlock.ColumnFamily]*F
	byIdx []*F // nil where free
	ids   []txnlock.ColumnFamily
}

// Init registers the default column family, made by newF with index 0.
func (r *Families[F]) Init(newF func(idx uint16) *F) {
	def := newF(0)
	r.tab.Store(&famTable[F]{
		def:   def,
		byID:  map[txnlock.ColumnFamily]*F{txnlock.DefaultColumnFamily: def},
		byIdx: []*F{def},
		ids:   []txnlock.ColumnFamily{txnlock.DefaultColumnFamily},
	})
}

// Get returns column family cf, or nil if it is not registered.
func (r *Families[F]) Get(cf txnlock.ColumnFamily) *F {
	t := r.tab.Load()
	if cf == txnlock.DefaultColumnFamily {
		return t.def
	}
	return t.byID[cf]
}

// At returns the family of index idx, or nil if none has it now.
func (r *Families[F]) At(idx uint16) *F {
	if t := r.tab.Load(); int(idx) < len(t.byIdx) {
		return t.byIdx[idx]
	}
	return nil
}

// All yields the registered families in the order of their ids.
func (r *Families[F]) All(yield func(txnlock.ColumnFamily, *F) bool) {
	t := r.tab.Load()
	for _, id := range t.ids {
		if !yield(id, t.byID[id]) {
			return
		}
	}
}

// AddLocked registers cf, made by newF with the index it gets:
// ErrColumnFamilyExists if cf is registered, ErrUnknownColumnFamily if it
// is negative, ErrLockLimit past 65,536 families. Mu is held.
func (r *Families[F]) AddLocked(cf txnlock.ColumnFamily, newF func(idx uint16) *F) error {
	old := r.tab.Load()
	switch {
	case cf < 0:
		return txnlock.ErrUnknownColumnFamily
	case old.byID[cf] != nil:
		return txnlock.ErrColumnFamilyExists
	}
	idx := slices.Index(old.byIdx, nil)
	if idx < 0 {
		if len(old.byIdx) > math.MaxUint16 {
			return txnlock.ErrLockLimit
		}
		idx = len(old.byIdx)
	}
	t := old.clone()
	f := newF(uint16(idx))
	if idx == len(t.byIdx) {
		t.byIdx = append(t.byIdx, f)
	} else {
		t.byIdx[idx] = f
	}
	t.byID[cf] = f
	i, _ := slices.BinarySearch(t.ids, cf)
	t.ids = slices.Insert(t.ids, i, cf)
	r.tab.Store(t)
	return nil
}

// RemoveLocked forgets cf, which is registered and not the default, once
// its manager found it unused: its index is free again. Mu is held.
func (r *Families[F]) RemoveLocked(cf txnlock.ColumnFamily) {
	t := r.tab.Load().clone()
	f := t.byID[cf]
	delete(t.byID, cf)
	t.byIdx[slices.Index(t.byIdx, f)] = nil
	t.ids = slices.DeleteFunc(t.ids, func(id txnlock.ColumnFamily) bool { return id == cf })
	r.tab.Store(t)
}

func (t *famTable[F]) clone() *famTable[F] {
	c := &famTable[F]{def: t.def, byID: make(map[txnlock.ColumnFamily]*F, len(t.byID)+1)}
	for id, f := range t.byID {
		c.byID[id] = f
	}
	c.byIdx = slices.Clone(t.byIdx)
	c.ids = slices.Clone(t.ids)
	return c
}

// Family checks a column family given to a call: cf's family, or
// ErrUnknownColumnFamily.
func (r *Families[F]) Family(cf txnlock.ColumnFamily) (*F, error) {
	if f := r.Get(cf); f != nil {
		return f, nil
	}
	return nil, txnlock.ErrUnknownColumnFamily
}
