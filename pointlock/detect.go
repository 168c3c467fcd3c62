package pointlock

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// A stripe answers the detector's questions about the waiters queued in
// it (lockwait.Source): the detector asks when a search reaches a wait,
// and the stripe answers from its live lock table under its latch. The
// manager tells the detector nothing when it grants or releases.
//
// Under the latch an active waiter is still queued in its Lock (w.Ext): a
// grant claims it under the latch, and a failed waiter stays linked until
// its own goroutine unlinks it, under the latch too.
var _ lockwait.Source = (*stripe)(nil)

// lockCounter is the manager as its detector sees it: it tells how many
// locks a transaction holds, for reports and the fewest-locks policy.
type lockCounter struct{ m *Manager }

var _ detect.LockCounter = lockCounter{}

// LocksHeld is how many locks txn holds in the manager.
func (c lockCounter) LocksHeld(txn txnlock.TxnID) int { return c.m.sh.Txns.Count(txn) }

// Blockers appends the holders of w's Lock: every waiter of a key waits
// for the same transactions, so a search never walks the queue.
func (st *stripe) Blockers(w *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !w.Active() {
		return dst, false
	}
	return w.Ext.(*locktable.Lock).AppendHolders(dst), true
}

// WaitsFor appends whom w waits for directly once its Lock has settled
// (locktable.Lock.SettledWaitsFor): the detector's confirmation of an
// edge.
func (st *stripe) WaitsFor(w *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !w.Active() {
		return dst, false
	}
	return w.Ext.(*locktable.Lock).SettledWaitsFor(dst, w), true
}
