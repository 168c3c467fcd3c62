package pointlock

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// Status returns a snapshot of every held lock and every waiting request,
// sorted (txnlock.Status.Sort). Each stripe is read under its own mutex, so
// the snapshot is consistent per key, not across keys.
func (m *Manager) Status() txnlock.Status {
	var s txnlock.Status
	for _, lm := range m.cfs.Load().byIdx {
		if lm == nil {
			continue
		}
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			st.tab.All(func(_ uint64, e *entry) bool { appendEntryStatusLocked(&s, lm.cf, e); return true })
			st.mu.Unlock()
		}
	}
	s.Sort()
	return s
}

func appendEntryStatusLocked(s *txnlock.Status, cf txnlock.ColumnFamily, e *entry) {
	r := txnlock.Point([]byte(e.Key()))
	if e.h.rec != nil {
		holders := e.holdersLocked(nil)
		slices.Sort(holders)
		mode := e.h.mode
		if e.x != nil {
			for _, h := range e.x.more {
				mode = mode.Max(h.mode)
			}
		}
		s.Locks = append(s.Locks, txnlock.LockStatus{CF: cf, Range: r, Mode: mode, Holders: holders})
	}
	if e.x == nil {
		return
	}
	for w := e.x.q.Front(); w != nil; w = w.Next() {
		if !w.Active() {
			continue // leaving: it leaves no trace
		}
		s.Waits = append(s.Waits, txnlock.WaitStatus{
			Txn:      w.Txn(),
			CF:       cf,
			Range:    r,
			Mode:     w.Lock.Mode,
			Upgrade:  w.Upgrade,
			Blockers: e.blockersLocked(nil, w),
			Since:    w.Since,
		})
	}
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
