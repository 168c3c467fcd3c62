package pointlock

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/locktable"
)

// Status returns a snapshot of every held lock and every waiting request,
// sorted (txnlock.Status.Sort). Each stripe is read under its own mutex, so
// the snapshot is consistent per key, not across keys. Under the mutex
// Status only copies what each key has; whom each waiter waits for, the
// sorting and the output are built after the mutex is released, so a
// scrape costs a hot key one copy of its queue.
func (m *Manager) Status() txnlock.Status {
	var s txnlock.Status
	var snap locktable.Snapshot
	for _, lm := range m.sh.Fams.All {
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			st.tab.All(func(_ uint64, l *locktable.Lock) bool { snap.Add(l); return true })
			st.mu.Unlock()
			snap.AppendTo(&s, lm.cf)
		}
	}
	s.Sort()
	return s
}

// AddStats adds lm's counters, summed over its stripes, and its locked
// keys to s (shell.Family; the manager's Stats sums them).
func (lm *lockMap) AddStats(s *txnlock.Stats) {
	for i := range lm.strip {
		st := &lm.strip[i]
		st.mu.Lock()
		st.c.AddTo(s)
		s.CurrentLocks += st.held
		st.mu.Unlock()
	}
}
