package cluster

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
)

// seamOf is the node as its managers see it (detect.Detector): the local
// detector's seam, with every attachment wrapped so that the node also
// tracks its waits.
type seamOf Node

// Attach attaches the manager to the local detector and wraps the
// attachment.
func (s *seamOf) Attach(c detect.LockCounter) detect.Graph {
	n := (*Node)(s)
	return &graph{Graph: n.local.Seam().Attach(c), w: &n.waits, c: c, n: n}
}

// FiniteWaits is true: a wait across nodes whose link to the detector is
// cut is ended by its timeout alone.
func (s *seamOf) FiniteWaits() bool { return true }

// graph is one manager's attachment: the local detector's, and the node's
// record of the waits.
type graph struct {
	detect.Graph
	w *waits
	c detect.LockCounter
	n *Node
}

// Block records the wait for export, then reports it to the local
// detector.
func (g *graph) Block(e detect.Edge) bool {
	g.w.add(e.Waiter, g.c)
	return g.Graph.Block(e)
}

// Unblock forgets the wait here and in the local detector.
func (g *graph) Unblock(w detect.Waiter) {
	g.w.remove(w)
	g.Graph.Unblock(w)
}

// waits are the waits of a node's managers that their waiters have
// reported (Block) and not yet ended (Unblock): what the node exports,
// and what it reads when the detector asks it to confirm a cycle or fail
// a wait.
type waits struct {
	seq atomic.Uint64
	// mu guards byWaiter and bySeq; a record's own mutex guards the
	// calls to its waiter. Lock order: mu, then a record's mu.
	mu       sync.Mutex
	byWaiter map[detect.Waiter]*record
	bySeq    map[uint64]*record
	clock    txnlock.Clock
}

// record is one tracked wait. Its waiter is asked only with mu held and
// gone false: Unblock sets gone under mu before it returns, so the waiter
// is never asked after its wait ended (it may be recycled).
type record struct {
	seq   uint64
	txn   txnlock.TxnID
	since time.Time
	c     detect.LockCounter
	mu    sync.Mutex
	w     detect.Waiter
	gone  bool
}

func newWaits(clock txnlock.Clock) waits {
	return waits{byWaiter: map[detect.Waiter]*record{}, bySeq: map[uint64]*record{}, clock: clock}
}

func (ws *waits) add(w detect.Waiter, c detect.LockCounter) {
	r := &record{seq: ws.seq.Add(1), txn: w.Txn(), since: ws.clock.Now(), c: c, w: w}
	ws.mu.Lock()
	ws.byWaiter[w] = r
	ws.bySeq[r.seq] = r
	ws.mu.Unlock()
}

func (ws *waits) remove(w detect.Waiter) {
	ws.mu.Lock()
	r := ws.byWaiter[w]
	if r != nil {
		delete(ws.byWaiter, w)
		delete(ws.bySeq, r.seq)
	}
	ws.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.gone = true
		r.mu.Unlock()
	}
}

// older returns the records reported at or before t, oldest first.
func (ws *waits) older(t time.Time) []*record {
	ws.mu.Lock()
	var out []*record
	for _, r := range ws.bySeq {
		if !r.since.After(t) {
			out = append(out, r)
		}
	}
	ws.mu.Unlock()
	slices.SortFunc(out, func(a, b *record) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (ws *waits) get(seq uint64) *record {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.bySeq[seq]
}

// waitsFor reads whom the wait waits for now, from the manager's live
// lock table; false if the wait is over.
func (r *record) waitsFor() ([]txnlock.TxnID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone || !r.w.Active() {
		return nil, false
	}
	return r.w.WaitsFor(nil)
}

// describe reads the wait for a report; false if the wait is over.
func (r *record) describe() (entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone || !r.w.Active() {
		return entry{}, false
	}
	lock, since := r.w.Requested()
	held := 0
	if r.c != nil {
		held = r.c.LocksHeld(r.txn)
	}
	return entry{Txn: r.txn, Lock: toWire(lock), LocksHeld: held, Since: since}, true
}

// fail ends the wait with err if it still waits.
func (r *record) fail(err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return false
	}
	return r.w.Fail(err)
}
