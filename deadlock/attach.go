package deadlock

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
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

// Seam connects the managers of this module to the detector
// (txnlock.Detector); a manager calls it when it is created with the
// detector in its WaitOptions, and a user never needs to.
func (d *Detector) Seam() detect.Detector { return (*seamOf)(d) }

// seamOf is the detector as its managers see it (detect.Detector).
type seamOf Detector

// Attach connects a manager; a nil c counts no locks.
func (s *seamOf) Attach(c detect.LockCounter) detect.Graph {
	d := (*Detector)(s)
	a := &attachment{d: d, c: c}
	if c != nil {
		d.att.add(a)
	}
	return a
}

// FiniteWaits is false: the detector sees every wait of its managers, so
// a wait without a timeout ends when its cycle is found.
func (s *seamOf) FiniteWaits() bool { return false }

var _ detect.Lister = (*seamOf)(nil)

// Waits lists the reported waits (detect.Lister).
func (s *seamOf) Waits(fn func(txn txnlock.TxnID, stamp uint64)) { (*Detector)(s).reg.each(fn) }

// WithWait asks a reported wait something (detect.Lister).
func (s *seamOf) WithWait(txn txnlock.TxnID, stamp uint64, fn func(w detect.Waiter)) bool {
	return (*Detector)(s).reg.with(txn, stamp, fn)
}

// LocksHeld sums what every attached manager says txn holds.
func (s *seamOf) LocksHeld(txn txnlock.TxnID) int { return (*Detector)(s).att.locksHeld(txn) }

// attachment is one manager's seam to the detector (detect.Graph).
type attachment struct {
	d *Detector
	c detect.LockCounter
}

var _ detect.Graph = (*attachment)(nil)

// Block records e's wait and reports whether it needs a Check
// (Detector.block).
func (a *attachment) Block(e detect.Edge) bool { return a.d.block(e) }

// Unblock forgets w's wait (Detector.unblock).
func (a *attachment) Unblock(w detect.Waiter) { a.d.unblock(w) }

// Check searches for a cycle through w's wait (Detector.check).
func (a *attachment) Check(w detect.Waiter) error { return a.d.check(w, w.Txn()) }

// Recheck searches for a cycle through w's wait (Detector.check).
func (a *attachment) Recheck(w detect.Waiter, txn txnlock.TxnID) { a.d.check(w, txn) }

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
