package pointlock

// table is a stripe's hash table: 64-bit key hash → *entry, open addressing
// with linear probing, guarded by the stripe mutex. It replaces a Go map
// because a lock request needs "find, or insert here" in one probe and a
// delete that never rehashes the seed; keys whose 64-bit hashes collide
// simply occupy neighbouring slots and are told apart by their key.
//
// The home slot of a hash is taken from its high bits (the stripe was
// chosen by its low bits). The load factor stays between 3/16 (shrink) and
// 3/4 (grow); a delete shifts the following slots back instead of leaving a
// tombstone, so probe sequences never lengthen over time.
type table struct {
	slots []slot // len is 0 or a power of two
	shift uint8  // 64 - log2(len(slots))
	n     int    // occupied slots
}

type slot struct {
	h uint64
	e *entry // nil: empty
}

const minTableSize = 8

func (t *table) home(h uint64) int { return int(h >> t.shift) }

// find returns the entry of key (hash h), or nil and the empty slot where it
// would be inserted (-1 if the table has no slots).
func (t *table) find(h uint64, key []byte) (*entry, int) {
	if len(t.slots) == 0 {
		return nil, -1
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil, i
		}
		if s.h == h && s.e.key == string(key) {
			return s.e, i
		}
	}
}

// findString is find for a string key.
func (t *table) findString(h uint64, key string) *entry {
	if len(t.slots) == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.key == key {
			return s.e
		}
	}
}

// has reports whether e is in the table under hash h.
func (t *table) has(h uint64, e *entry) bool {
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

// insertAt puts e (hash h) in the empty slot pos returned by find.
func (t *table) insertAt(pos int, h uint64, e *entry) {
	if pos < 0 || (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minTableSize, 2*len(t.slots)))
		pos = t.emptySlot(h)
	}
	t.slots[pos] = slot{h: h, e: e}
	t.n++
}

// remove deletes e (hash h); it reports false if e is not in the table.
func (t *table) remove(h uint64, e *entry) bool {
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
	t.slots[i] = slot{}
	t.n--
	if len(t.slots) > minTableSize && t.n*16 < len(t.slots)*3 {
		t.resize(len(t.slots) / 2)
	}
	return true
}

func (t *table) emptySlot(h uint64) int {
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	return i
}

func (t *table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
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

// all calls f for every entry.
func (t *table) all(f func(h uint64, e *entry)) {
	for _, s := range t.slots {
		if s.e != nil {
			f(s.h, s.e)
		}
	}
}

// reset empties the table and frees its slots.
func (t *table) reset() { *t = table{} }
