package pointlock

import (
	"unsafe"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/latch"
	"github.com/txnlock/txnlock/internal/locktable"
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

func newLockMap(m *Manager, cf txnlock.ColumnFamily, idx uint16, n int) *lockMap {
	lm := &lockMap{cf: cf, idx: idx, mask: uint64(n - 1), strip: make([]stripe, n)}
	for i := range lm.strip {
		lm.strip[i].m, lm.strip[i].cfIdx = m, idx
	}
	return lm
}

// stripe returns the stripe of a key hash.
func (lm *lockMap) stripe(h uint64) *stripe { return &lm.strip[h&lm.mask] }

// stripeState is a stripe without its padding.
type stripeState struct {
	mu    latch.Mutex
	m     *Manager // immutable
	cfIdx uint16   // the lockMap's idx; immutable
	// The fields below are guarded by mu.

	tab     locktable.Table // the stripe's keys
	held    int64           // keys with at least one holder
	dropped bool            // the column family was dropped (set with every stripe locked)
	c       lockwait.Counters
}

// stripe is one shard of a lockMap, padded so that two stripes' mutexes
// never share a 128-byte cache-line pair.
type stripe struct {
	stripeState
	_ [128 - unsafe.Sizeof(stripeState{})%128]byte
}
