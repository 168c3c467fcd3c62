package pointlock

import (
	"slices"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// Status returns a snapshot of every held lock and every waiting request,
// sorted (txnlock.Status.Sort). Each stripe is read under its own mutex, so
// the snapshot is consistent per key, not across keys. Under the mutex
// Status only copies what each key has (its holders and its queue, in
// order); whom each waiter waits for (internal/waitsfor), the sorting and
// the output are built after the mutex is released, so a scrape costs a
// hot key one copy of its queue.
func (m *Manager) Status() txnlock.Status {
	var s txnlock.Status
	var snap statusSnap
	for _, lm := range m.cfs.Load().byIdx {
		if lm == nil {
			continue
		}
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			st.tab.All(func(_ uint64, e *entry) bool { snap.addLocked(e); return true })
			st.mu.Unlock()
			snap.appendTo(&s, lm.cf)
		}
	}
	s.Sort()
	return s
}

// statusSnap is a copy of some keys' holders and queues, taken under their
// stripe mutex and turned into Status rows after it is released. Its
// buffers are reused from stripe to stripe.
type statusSnap struct {
	keys    []keySnap
	holders []waitsfor.Holder
	waits   []waitSnap
	ahead   []waitsfor.Request // the Scanner's buffer
}

// keySnap is one key of a statusSnap: its holders and waits are the ranges
// up to holders and waits of the snap's slices, from the previous key's.
type keySnap struct {
	key            string
	holders, waits int
}

type waitSnap struct {
	req   waitsfor.Request
	since time.Time
}

// addLocked copies e: its key, holders and active waiters in queue order.
func (s *statusSnap) addLocked(e *entry) {
	s.holders = e.holdersOfLocked(s.holders)
	if e.x != nil {
		for w := e.x.q.Front(); w != nil; w = w.Next() {
			if w.Active() { // a failed waiter is leaving: it leaves no trace
				s.waits = append(s.waits, waitSnap{waitsfor.Request{Txn: w.Txn(), Mode: w.Lock.Mode, Upgrade: w.Upgrade}, w.Since})
			}
		}
	}
	// The entry's key buffer is recycled with it: copy.
	s.keys = append(s.keys, keySnap{strings.Clone(e.Key()), len(s.holders), len(s.waits)})
}

// appendTo appends the rows of the copied keys to st and empties s.
func (s *statusSnap) appendTo(st *txnlock.Status, cf txnlock.ColumnFamily) {
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

// Stats returns the manager's counters, summed over stripes (and over the
// column families dropped so far).
func (m *Manager) Stats() txnlock.Stats {
	var s txnlock.Stats
	m.cfMu.Lock() // no column family is dropped meanwhile
	defer m.cfMu.Unlock()
	m.retired.AddTo(&s)
	for _, lm := range m.cfs.Load().byIdx {
		if lm == nil {
			continue
		}
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			st.c.AddTo(&s)
			s.CurrentLocks += st.held
			st.mu.Unlock()
		}
	}
	return s
}
