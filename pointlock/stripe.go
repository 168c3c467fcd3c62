package pointlock

import (
	"unsafe"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/latch"
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
		lm.strip[i].cfIdx = idx
	}
	return lm
}

// stripe returns the stripe of a key hash.
func (lm *lockMap) stripe(h uint64) *stripe { return &lm.strip[h&lm.mask] }

// stripeState is a stripe without its padding.
type stripeState struct {
	mu    latch.Mutex
	cfIdx uint16 // the lockMap's idx; immutable
	// The fields below are guarded by mu.

	tab     keytable.Table[entry] // key hash → entry
	held    int64                 // entries with at least one holder
	dropped bool                  // the column family was dropped (set with every stripe locked)
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

// newEntryLocked returns an empty entry for key, recycled if possible. The
// caller inserts it in st.tab.
//
// A recycled entry keeps its key buffer (keytable.Entry.SetKey): nothing
// outside the stripe mutex keeps an entry's key: every reader copies it or
// reads it under the mutex, or (UnlockAll) under the transaction stripe
// while the entry is held, hence not recyclable.
func (st *stripe) newEntryLocked(key []byte) *entry {
	// A free entry's h.e links the list.
	e := keytable.TakeFree(&st.free, func(e *entry) **entry { return &e.h.e }, len(key))
	if e == nil {
		e = &entry{}
		e.h.e = e
		e.SetKey(key)
		return e
	}
	st.freeLen--
	e.h.e = e
	e.SetKey(key)
	if e.x != nil {
		e.x.ref = txnlock.Range{} // made for the old key
	}
	return e
}

// deleteLocked removes e (hash h) if it is in the stripe, and recycles it.
func (st *stripe) deleteLocked(h uint64, e *entry) {
	if !st.tab.Remove(h, e) {
		return // not in the table (Close cleared it)
	}
	if st.freeLen < maxFree {
		// Empty already: no holder, no waiter (x, if any, stays for reuse),
		// and key is overwritten on reuse.
		e.h.e = st.free
		st.free = e
		st.freeLen++
	}
}
