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
