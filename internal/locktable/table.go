package locktable

import "github.com/txnlock/txnlock/internal/keytable"

// Table is the Locks of one stripe, by key: a hash table of the live
// Locks (keytable.Table) and a few lists of recycled ones, so that
// locking a fresh key allocates nothing in the steady state. Its owner's
// latch guards it.
type Table struct {
	tab keytable.Table[Lock]
	// free holds the recycled Locks, one list per key length (a Lock
	// keeps its key's buffer for a key of the same length), so that New
	// finds one that fits by the lengths here and touches no Lock but
	// the one it takes (a Lock freed on another core is a cache miss).
	// nfree counts them all.
	free  [freeLengths]freeList
	nfree int
}

// freeList is the recycled Locks whose keys have keyLen bytes, newest
// first, linked through their empty inline holder's lock field (no slice
// to fetch and dirty besides the Lock). An empty list takes any length.
type freeList struct {
	keyLen, n int32
	head      *Lock
}

// Recycling bounds: a table keeps at most MaxFree recycled Locks, each
// with a key of at most MaxFreeKey bytes, of at most freeLengths
// lengths.
const (
	MaxFree     = 64
	MaxFreeKey  = 256
	freeLengths = 4
	// freeSteal is how many recycled Locks a table keeps before New takes
	// one whose key buffer does not fit (from the longest list), so that
	// lengths no longer in use leave.
	freeSteal = 4
)

// Find returns the Lock of key (hash h), or nil and the position where
// New would insert it.
func (t *Table) Find(h uint64, key []byte) (*Lock, int) { return t.tab.Find(h, key) }

// FindString is Find for a string key, without the position.
func (t *Table) FindString(h uint64, key string) *Lock { return t.tab.FindString(h, key) }

// Has reports whether l is in the table under hash h.
func (t *Table) Has(h uint64, l *Lock) bool { return t.tab.Has(h, l) }

// Len returns the number of Locks in the table.
func (t *Table) Len() int { return t.tab.Len() }

// Slots returns the number of the hash table's slots (memory accounting).
func (t *Table) Slots() int { return t.tab.Slots() }

// All calls fn for every Lock until it returns false; fn must not change
// the table.
func (t *Table) All(fn func(h uint64, l *Lock) bool) { t.tab.All(fn) }

// New inserts an empty Lock for key (hash h) at pos, returned by Find with
// no change to the table since, and returns it. It reuses a recycled Lock,
// preferring one whose key buffer has len(key) bytes.
func (t *Table) New(pos int, h uint64, key []byte) *Lock {
	l := t.takeFree(len(key))
	if l == nil {
		l = &Lock{}
	}
	l.SetKey(key)
	t.tab.InsertAt(pos, h, l)
	return l
}

// takeFree returns a recycled Lock, or nil: the newest whose key has
// keyLen bytes; if none has, the newest of the longest list once the table
// keeps freeSteal (so that lengths no longer in use leave), and nothing
// while it keeps fewer (so that the lists come to hold the lengths in
// use).
func (t *Table) takeFree(keyLen int) *Lock {
	var longest *freeList
	for i := range t.free {
		f := &t.free[i]
		if f.head == nil {
			continue
		}
		if int(f.keyLen) == keyLen {
			return t.pop(f)
		}
		if longest == nil || f.n > longest.n {
			longest = f
		}
	}
	if longest == nil || t.nfree < freeSteal {
		return nil
	}
	return t.pop(longest)
}

// pop takes the newest Lock of f, which is not empty.
func (t *Table) pop(f *freeList) *Lock {
	l := f.head
	f.head, l.h.lock = l.h.lock, nil
	f.n--
	t.nfree--
	return l
}

// Delete removes l, which must be Empty, from the table (hash h) and keeps
// it for reuse; l must not be used after that. It reports false if l is
// not in the table.
func (t *Table) Delete(h uint64, l *Lock) bool {
	if !t.tab.Remove(h, l) {
		return false
	}
	if t.nfree >= MaxFree || len(l.Key()) > MaxFreeKey {
		return true
	}
	n := int32(len(l.Key()))
	var f *freeList // the list of n, else an empty one
	for i := range t.free {
		if g := &t.free[i]; g.keyLen == n {
			f = g
			break
		} else if g.head == nil && f == nil {
			f = g
		}
	}
	if f == nil {
		return true // as many other lengths are kept: not this one
	}
	l.reset()
	f.keyLen = n
	l.h.lock, f.head = f.head, l
	f.n++
	t.nfree++
	return true
}

// Reset empties the table and drops its recycled Locks (Close).
func (t *Table) Reset() { *t = Table{} }
