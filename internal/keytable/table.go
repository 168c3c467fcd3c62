package keytable

import (
	"reflect"
	"unsafe"
)

// Table is a 64-bit key hash → *E table, open addressing with linear
// probing. It replaces a Go map because a lock request needs "find, or
// insert here" in one probe and a delete that never rehashes with a new
// hash seed; keys whose 64-bit hashes collide simply occupy neighbouring
// slots and are told apart by their key. The zero Table is empty and ready
// to use.
//
// The home slot of a hash is taken from its high bits (callers pick their
// stripe with the low bits). The load factor stays between 3/16 (shrink)
// and 3/4 (grow); a delete shifts the following slots back instead of
// leaving a tombstone, so probe sequences never lengthen over time.
type Table[E any] struct {
	slots []slot[E] // len is 0 or a power of two
	shift uint8     // 64 - log2(len(slots))
	n     int       // occupied slots
}

type slot[E any] struct {
	h uint64
	e *E // nil: empty
}

// MinSize is the number of slots of a table's first allocation.
const MinSize = 8

// Valid reports whether E embeds Entry as its first field, as Table
// requires.
func Valid[E any]() bool {
	t := reflect.TypeFor[E]()
	return t.Kind() == reflect.Struct && t.NumField() > 0 && t.Field(0).Anonymous &&
		t.Field(0).Offset == 0 && t.Field(0).Type == reflect.TypeFor[Entry]()
}

// keyOf returns the key of e through its Entry header.
func keyOf[E any](e *E) string { return (*Entry)(unsafe.Pointer(e)).key }

// Len returns the number of entries.
func (t *Table[E]) Len() int { return t.n }

// Slots returns the number of slots (for memory accounting and tests).
func (t *Table[E]) Slots() int { return len(t.slots) }

func (t *Table[E]) home(h uint64) int { return int(h >> t.shift) }

// Find returns the entry of key (hash h), or nil and the empty slot where
// it would be inserted (-1 if the table has no slots).
func (t *Table[E]) Find(h uint64, key []byte) (*E, int) {
	if len(t.slots) == 0 {
		return nil, -1
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil, i
		}
		if s.h == h && keyOf(s.e) == string(key) {
			return s.e, i
		}
	}
}

// FindString is Find for a string key.
func (t *Table[E]) FindString(h uint64, key string) *E {
	if len(t.slots) == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && keyOf(s.e) == key {
			return s.e
		}
	}
}

// Has reports whether e is in the table under hash h.
func (t *Table[E]) Has(h uint64, e *E) bool {
	if len(t.slots) == 0 {
		return false
	}
	mask := len(t.slots) - 1
	for i := t.home(h); t.slots[i].e != nil; i = (i + 1) & mask {
		if t.slots[i].e == e {
			return true
		}
	}
	return false
}

// InsertAt puts e (hash h) in the empty slot pos returned by Find, with no
// table change in between.
func (t *Table[E]) InsertAt(pos int, h uint64, e *E) {
	if pos < 0 || (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(MinSize, 2*len(t.slots)))
		pos = t.emptySlot(h)
	}
	t.slots[pos] = slot[E]{h: h, e: e}
	t.n++
}

// Remove deletes e (hash h); it reports false if e is not in the table.
func (t *Table[E]) Remove(h uint64, e *E) bool {
	if len(t.slots) == 0 {
		return false
	}
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].e != e {
		if t.slots[i].e == nil {
			return false
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move back every following slot whose home
	// is not in (i, j], so that no probe sequence crosses a hole.
	for j := (i + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		k := t.home(t.slots[j].h)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot[E]{}
	t.n--
	if len(t.slots) > MinSize && t.n*16 < len(t.slots)*3 {
		t.resize(len(t.slots) / 2)
	}
	return true
}

func (t *Table[E]) emptySlot(h uint64) int {
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	return i
}

func (t *Table[E]) resize(size int) {
	old := t.slots
	t.slots = make([]slot[E], size)
	bits := uint8(0)
	for 1<<bits < size {
		bits++
	}
	t.shift = 64 - bits
	for _, s := range old {
		if s.e != nil {
			t.slots[t.emptySlot(s.h)] = s
		}
	}
}

// All calls f for every entry, in no particular order, until f returns
// false. f must not change the table.
func (t *Table[E]) All(f func(h uint64, e *E) bool) {
	for _, s := range t.slots {
		if s.e != nil && !f(s.h, s.e) {
			return
		}
	}
}

// Reset empties the table and frees its slots.
func (t *Table[E]) Reset() { *t = Table[E]{} }
