// Package detect names the types of package seam as this module uses them,
// for txnlock's transaction ids and lock references: what a lock manager
// and a deadlock detector of the module say to each other (package seam's
// doc tells how).
package detect

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/seam"
)

type (
	// Detector is what a manager attaches to (txnlock.Detector.Seam).
	Detector = seam.Detector[txnlock.TxnID, txnlock.LockRef]
	// Graph is a manager's attachment to a Detector.
	Graph = seam.Graph[txnlock.TxnID, txnlock.LockRef]
	// Waiter is one blocked request, as a detector sees it.
	Waiter = seam.Waiter[txnlock.TxnID, txnlock.LockRef]
	// Edge describes a wait to the detector.
	Edge = seam.Edge[txnlock.TxnID, txnlock.LockRef]
	// LockCounter is what a detector asks a manager about a transaction.
	LockCounter = seam.LockCounter[txnlock.TxnID]
)

// Wrap returns d with every manager's attachment passed through wrap: how
// a test, or a server that counts what its detector reports, watches the
// calls of a real detector.
func Wrap(d txnlock.Detector, wrap func(Graph) Graph) txnlock.Detector {
	return wrapped{d: d.Seam(), wrap: wrap}
}

type wrapped struct {
	d    Detector
	wrap func(Graph) Graph
}

func (w wrapped) Seam() Detector             { return w }
func (w wrapped) Attach(c LockCounter) Graph { return w.wrap(w.d.Attach(c)) }
func (w wrapped) FiniteWaits() bool          { return w.d.FiniteWaits() }

// Lister is offered by a detector that records the waits reported to it
// (package deadlock's, through its Detector), to a detector built on it
// (package cluster), which finds it by a type assertion: the waits now,
// and the one safe way to ask a reported wait something.
type Lister interface {
	// Waits calls fn for each reported wait that may still be going on:
	// its transaction and its stamp (unique among the detector's waits).
	// fn must not call the detector.
	Waits(fn func(txn txnlock.TxnID, stamp uint64))
	// WithWait calls fn with the waiter of txn's wait of that stamp while
	// the wait is reported, so that the waiter is not recycled meanwhile,
	// and reports whether it did. fn may ask the waiter anything (its
	// manager's latches come after the detector's locks) but must not
	// call the detector.
	WithWait(txn txnlock.TxnID, stamp uint64, fn func(w Waiter)) bool
	// LocksHeld is how many locks txn holds in every manager attached.
	LocksHeld(txn txnlock.TxnID) int
}
