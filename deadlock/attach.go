package deadlock

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
)

// attachments are the managers attached to a detector: whom it asks how
// many locks a transaction holds.
type attachments struct {
	// mu serializes Attach and Detach; list is replaced, never changed,
	// so that a count reads it without a lock.
	mu   sync.Mutex
	list atomic.Pointer[[]*attachment]
}

// locksHeld sums what every attached manager says txn holds.
func (as *attachments) locksHeld(txn txnlock.TxnID) int {
	n := 0
	if l := as.list.Load(); l != nil {
		for _, a := range *l {
			n += a.c.LocksHeld(txn)
		}
	}
	return n
}

func (as *attachments) add(a *attachment) {
	as.mu.Lock()
	defer as.mu.Unlock()
	var l []*attachment
	if old := as.list.Load(); old != nil {
		l = slices.Clone(*old)
	}
	l = append(l, a)
	as.list.Store(&l)
}

func (as *attachments) remove(a *attachment) {
	as.mu.Lock()
	defer as.mu.Unlock()
	old := as.list.Load()
	if old == nil {
		return
	}
	l := slices.DeleteFunc(slices.Clone(*old), func(x *attachment) bool { return x == a })
	as.list.Store(&l)
}

// Attach connects a lock manager to the detector (txnlock.Detector); a
// manager calls it when it is created with the detector in its
// WaitOptions, and a user never needs to. A nil c counts no locks.
func (d *Detector) Attach(c txnlock.LockCounter) txnlock.WaitGraph {
	a := &attachment{d: d, c: c}
	if c != nil {
		d.att.add(a)
	}
	return a
}

// attachment is one manager's seam to the detector (txnlock.WaitGraph).
type attachment struct {
	d *Detector
	c txnlock.LockCounter
}

var _ txnlock.WaitGraph = (*attachment)(nil)

// Block records e's wait and reports whether it needs a Check
// (Detector.block).
func (a *attachment) Block(e txnlock.WaitEdge) bool { return a.d.block(e) }

// Unblock forgets w's wait (Detector.unblock).
func (a *attachment) Unblock(w txnlock.Waiter) { a.d.unblock(w) }

// Check searches for a cycle through w's wait (Detector.check).
func (a *attachment) Check(w txnlock.Waiter) error { return a.d.check(w, w.Txn()) }

// Recheck searches for a cycle through w's wait (Detector.check).
func (a *attachment) Recheck(w txnlock.Waiter, txn txnlock.TxnID) { a.d.check(w, txn) }

// Passed searches from txn's waits, if it waits (Detector.passed).
func (a *attachment) Passed(txn txnlock.TxnID) { a.d.passed(txn) }

// Stamp returns the next wait stamp.
func (a *attachment) Stamp() uint64 { return a.d.stamps.Add(1) }

// DetectDelay is Options.DetectDelay, or -1 (never check) when Detection
// is Off.
func (a *attachment) DetectDelay() time.Duration {
	if a.d.opts.Detection == Off {
		return -1
	}
	return a.d.opts.DetectDelay
}

// Detach forgets the manager: the detector counts its locks no more.
func (a *attachment) Detach() { a.d.att.remove(a) }
