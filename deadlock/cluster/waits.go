package cluster

import (
	"cmp"
	"slices"
	"sync"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
)

// seamOf is the node as its managers see it (detect.Detector): the local
// detector's seam, which requires finite waits.
type seamOf Node

// Attach attaches the manager to the local detector: the node reads the
// waits from the local detector's record of them, so a wait costs
// nothing more than the local detector's report.
func (s *seamOf) Attach(c detect.LockCounter) detect.Graph {
	return (*Node)(s).local.Seam().Attach(c)
}

// FiniteWaits is true: a wait across nodes whose link to the detector is
// cut is ended by its timeout alone.
func (s *seamOf) FiniteWaits() bool { return true }

// waits is the node's view of its managers' waits, read from the local
// detector's record of the waits reported to it (detect.Lister) once a
// tick of the node's stream (every half Delay). A wait listed at exportAge
// ticks in a row is exported; a wait that ends between two ticks, as most
// do within microseconds, never leaves the local detector and costs the
// node nothing. Its waiter is asked only through the local detector
// (Lister.WithWait), which keeps it from being recycled meanwhile.
type waits struct {
	l detect.Lister
	// mu guards tick and seen. Lock order: mu, then the local detector's
	// locks (Lister.Waits).
	mu   sync.Mutex
	tick uint64
	seen map[ref]uint64 // the tick at which each listed wait was first listed
}

// exportAge is how many listings in a row a wait must be in to be
// exported: three, half a Delay apart, make at least Delay and at most one
// and a half since it began.
const exportAge = 3

// ref names one wait: its transaction and its stamp in the local
// detector (unique among the node's waits).
type ref struct {
	txn txnlock.TxnID
	seq uint64
}

func newWaits(l detect.Lister) *waits { return &waits{l: l, seen: map[ref]uint64{}} }

// advance moves the waits' clock by one tick and lists them again: a wait
// no longer listed is forgotten.
func (ws *waits) advance() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.tick++
	next := make(map[ref]uint64, len(ws.seen))
	ws.l.Waits(func(txn txnlock.TxnID, seq uint64) {
		k := ref{txn, seq}
		first, ok := ws.seen[k]
		if !ok {
			first = ws.tick
		}
		next[k] = first
	})
	ws.seen = next
}

// exportable returns the waits listed exportAge times in a row, in the
// order they were reported.
func (ws *waits) exportable() []ref {
	ws.mu.Lock()
	var out []ref
	for k, first := range ws.seen {
		if first+exportAge-1 <= ws.tick {
			out = append(out, k)
		}
	}
	ws.mu.Unlock()
	slices.SortFunc(out, func(a, b ref) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// get returns the wait of txn numbered seq, if it was listed last time.
func (ws *waits) get(txn txnlock.TxnID, seq uint64) (ref, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	k := ref{txn, seq}
	_, ok := ws.seen[k]
	return k, ok
}

// waitsFor reads whom the wait waits for now, from the manager's live
// lock table; false if the wait is over.
func (ws *waits) waitsFor(x ref) (to []txnlock.TxnID, ok bool) {
	ws.l.WithWait(x.txn, x.seq, func(w detect.Waiter) {
		if w.Active() {
			to, ok = w.WaitsFor(nil)
		}
	})
	return to, ok
}

// describe reads the wait for a report; false if the wait is over.
func (ws *waits) describe(x ref) (entry, bool) {
	var e entry
	live := false
	ws.l.WithWait(x.txn, x.seq, func(w detect.Waiter) {
		if w.Active() {
			lock, since := w.Requested()
			e, live = entry{Txn: x.txn, Lock: toWire(lock), Since: since}, true
		}
	})
	if live {
		e.LocksHeld = ws.l.LocksHeld(x.txn)
	}
	return e, live
}

// fail ends the wait with err if it still waits.
func (ws *waits) fail(x ref, err error) (failed bool) {
	ws.l.WithWait(x.txn, x.seq, func(w detect.Waiter) { failed = w.Fail(err) })
	return failed
}
