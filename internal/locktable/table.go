package locktable

import "github.com/txnlock/txnlock/internal/keytable"

// Table is the Locks of one stripe, by key: a hash table of the live
// Locks (keytable.Table) and a short list of recycled ones, so that
// locking a fresh key allocates nothing in the steady state. Its owner's
// latch guards it.
type Table struct {
	tab keytable.Table[Lock]
	// free lists the recycled Locks, newest first, linked through their
	// empty inline holder's lock field (no slice to fetch and dirty
	// besides the Lock when a stripe moves between cores); nfree counts
	// them.
	free  *Lock
	nfree int
}

// Recycling bounds: a table keeps at most MaxFree recycled Locks, each
// with a key of at most MaxFreeKey bytes.
const (
	MaxFree    = 64
	MaxFreeKey = 256
	// freeSearch is how many recycled Locks New looks at for one whose
	// key buffer fits.
	freeSearch = 4
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

// takeFree returns a recycled Lock, or nil. Among the newest freeSearch it
// takes one whose key has keyLen bytes; if none fits it takes the oldest
// of those once the list is that long (so that lengths no longer in use
// leave), and nothing while it is shorter (so that the list comes to hold
// every length in use).
func (t *Table) takeFree(keyLen int) *Lock {
	var prev *Lock
	l := t.free
	for i := 0; l != nil && len(l.Key()) != keyLen; i++ {
		if i == freeSearch-1 {
			break // l is the oldest looked at
		}
		prev, l = l, l.h.lock
	}
	if l == nil {
		return nil
	}
	if prev == nil {
		t.free = l.h.lock
	} else {
		prev.h.lock = l.h.lock
	}
	l.h.lock = nil
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
	if t.nfree < MaxFree && len(l.Key()) <= MaxFreeKey {
		l.reset()
		l.h.lock, t.free = t.free, l
		t.nfree++
	}
	return true
}

// Reset empties the table and drops its recycled Locks (Close).
func (t *Table) Reset() { *t = Table{} }
