package locktable

import (
	"slices"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// Snapshot is a copy of some Locks' holders and queues, taken under their
// latch (Add) and turned into status rows after it is released (AppendTo):
// whom each waiter waits for (internal/waitsfor), the sorting and the
// output cost a hot key nothing but one copy of its queue. Its buffers
// are reused from one latch to the next.
type Snapshot struct {
	keys    []keySnap
	holders []waitsfor.Holder
	waits   []waitSnap
	ahead   []waitsfor.Request // the Scanner's buffer
}

// keySnap is one key of a Snapshot: its holders and waits are the ranges
// up to holders and waits of the Snapshot's slices, from the previous
// key's.
type keySnap struct {
	key            string
	holders, waits int
}

type waitSnap struct {
	req   waitsfor.Request
	since time.Time
}

// Add copies l: its key, holders and active waiters in queue order.
func (s *Snapshot) Add(l *Lock) {
	s.holders = l.appendHolderModes(s.holders)
	for w := l.Front(); w != nil; w = w.Next() {
		if w.Active() { // a failed waiter is leaving: it leaves no trace
			s.waits = append(s.waits, waitSnap{waitsfor.Request{Txn: w.Txn(), Mode: w.Lock.Mode, Upgrade: w.Upgrade}, w.Since})
		}
	}
	// The Lock's key buffer is recycled with it: copy.
	s.keys = append(s.keys, keySnap{strings.Clone(l.Key()), len(s.holders), len(s.waits)})
}

// AppendTo appends the rows of the copied keys, in column family cf, to
// st, and empties s.
func (s *Snapshot) AppendTo(st *txnlock.Status, cf txnlock.ColumnFamily) {
	h0, w0 := 0, 0
	for _, k := range s.keys {
		holders, waits := s.holders[h0:k.holders], s.waits[w0:k.waits]
		h0, w0 = k.holders, k.waits
		r := txnlock.Point([]byte(k.key))
		if len(holders) > 0 {
			ls := txnlock.LockStatus{CF: cf, Range: r, Mode: txnlock.Shared, Holders: make([]txnlock.TxnID, len(holders))}
			for i, h := range holders {
				ls.Holders[i] = h.Txn
				ls.Mode = ls.Mode.Max(h.Mode)
			}
			slices.Sort(ls.Holders)
			st.Locks = append(st.Locks, ls)
		}
		sc := waitsfor.NewScanner(holders, s.ahead)
		// One array for the key's lists: a run of Shared requests is
		// listed once, by the Exclusive request behind it, so the lists
		// add up to at most twice the queue, plus the holders.
		blockers := make([]txnlock.TxnID, 0, 2*len(waits)+len(holders))
		st.Waits = slices.Grow(st.Waits, len(waits))
		for _, w := range waits {
			n := len(blockers)
			blockers = sc.Next(blockers, w.req)
			st.Waits = append(st.Waits, txnlock.WaitStatus{
				Txn: w.req.Txn, CF: cf, Range: r, Mode: w.req.Mode, Upgrade: w.req.Upgrade,
				Blockers: blockers[n:len(blockers):len(blockers)],
				Since:    w.since,
			})
		}
		s.ahead = sc.Ahead()
	}
	s.keys, s.holders, s.waits = s.keys[:0], s.holders[:0], s.waits[:0]
}
