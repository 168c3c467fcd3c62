package pointlock

import (
	"sync"
	"unsafe"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// lockMap is the lock table of one column family: a fixed array of stripes
// chosen by the key's hash.
type lockMap struct {
	cf    txnlock.ColumnFamily
	idx   uint16 // index in cfTable.byIdx, stored in every hold
	mask  uint64
	strip []stripe
}

func newLockMap(cf txnlock.ColumnFamily, idx uint16, n int) *lockMap {
	lm := &lockMap{cf: cf, idx: idx, mask: uint64(n - 1), strip: make([]stripe, n)}
	for i := range lm.strip {
		lm.strip[i].entries = make(map[uint64]*entry)
		lm.strip[i].cfIdx = idx
	}
	return lm
}

// stripe returns the stripe of a key hash.
func (lm *lockMap) stripe(h uint64) *stripe { return &lm.strip[h&lm.mask] }

// stripeState is a stripe without its padding.
type stripeState struct {
	mu    sync.Mutex
	cfIdx uint16 // the lockMap's idx; immutable
	// The fields below are guarded by mu.

	// entries maps a key's 64-bit hash to its entry; entries whose hashes
	// collide are chained through extra.next.
	entries map[uint64]*entry
	held    int64 // entries with at least one holder
	dropped bool  // the column family was dropped (set with every stripe locked)
	c       lockwait.Counters
	free    *entry          // recycled entries, linked through h.e (freeLen of them)
	freeLen int32           //
	scratch []txnlock.TxnID // reused for Detector.SetBlockers
}

// stripe is one shard of a lockMap, padded so that two stripes' mutexes
// never share a 128-byte cache-line pair.
type stripe struct {
	stripeState
	_ [128 - unsafe.Sizeof(stripeState{})%128]byte
}

// maxFree bounds the recycled entries kept per stripe.
const maxFree = 64

// findLocked returns the entry of key (hash h), or nil.
func (st *stripe) findLocked(h uint64, key []byte) *entry {
	e := st.entries[h]
	for e != nil && e.key != string(key) {
		if e.x == nil {
			return nil
		}
		e = e.x.next
	}
	return e
}

// findStringLocked is findLocked for a string key.
func (st *stripe) findStringLocked(h uint64, key string) *entry {
	e := st.entries[h]
	for e != nil && e.key != key {
		if e.x == nil {
			return nil
		}
		e = e.x.next
	}
	return e
}

// insertLocked creates the entry of key (hash h, known absent).
func (st *stripe) insertLocked(h uint64, key []byte) *entry {
	e := st.free
	if e != nil {
		st.free = e.h.e
		st.freeLen--
		e.h.e = e
	} else {
		e = &entry{}
		e.h.e = e
	}
	e.key = string(key)
	if head := st.entries[h]; head != nil {
		// A 64-bit hash collision: chain e after head.
		hx := head.ext()
		e.ext().next = hx.next
		hx.next = e
		return e
	}
	st.entries[h] = e
	return e
}

// deleteLocked removes e (hash h) if it is in the stripe, and recycles it.
func (st *stripe) deleteLocked(h uint64, e *entry) {
	head := st.entries[h]
	var next *entry
	if e.x != nil {
		next = e.x.next
	}
	switch {
	case head == e && next != nil:
		st.entries[h] = next
	case head == e:
		delete(st.entries, h)
	default:
		p := head
		for p != nil && p.x != nil && p.x.next != e {
			p = p.x.next
		}
		if p == nil || p.x == nil {
			return // not linked (the table was cleared by Close)
		}
		p.x.next = next
	}
	if st.freeLen < maxFree && (e.x == nil || e.x.q.Len() == 0) {
		*e = entry{}
		e.h.e = st.free
		st.free = e
		st.freeLen++
	}
}
