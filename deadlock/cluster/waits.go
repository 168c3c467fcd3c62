package cluster

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

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
	return &graph{Graph: n.local.Seam().Attach(c), w: n.waits, c: c, n: n}
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
// a wait. Most waits are over in microseconds, so a wait's record costs
// no clock read and no allocation: its age is counted in ticks of the
// node's stream (every half Delay), and records are recycled.
type waits struct {
	seq  atomic.Uint64
	tick atomic.Uint64
	pool sync.Pool // of *record
	// mu guards byWaiter; a record's own mutex guards the calls to its
	// waiter. Lock order: mu, then a record's mu.
	mu       sync.Mutex
	byWaiter map[detect.Waiter]*record
}

// exportAge is how many ticks a wait must have been reported for to be
// exported: three ticks of half Delay make at least Delay, at most one
// and a half.
const exportAge = 3

// record is one tracked wait. Its fields change only under mu, when it is
// taken for a wait (add) or let go (remove), and its waiter is asked only
// under mu, after a check that it is still the wait asked about (seq) and
// that the wait was not removed (gone): Unblock sets gone before it
// returns, so a waiter is never asked after its wait ended (it may be
// recycled, and so may the record).
type record struct {
	mu   sync.Mutex
	seq  uint64 // the wait's number: unique for the node's lifetime
	txn  txnlock.TxnID
	tick uint64 // when it was reported
	c    detect.LockCounter
	w    detect.Waiter
	gone bool
}

// ref names one wait: its record, while the record's seq is the same.
type ref struct {
	r   *record
	seq uint64
	txn txnlock.TxnID
}

func newWaits() *waits {
	return &waits{byWaiter: map[detect.Waiter]*record{}, pool: sync.Pool{New: func() any { return new(record) }}}
}

func (ws *waits) add(w detect.Waiter, c detect.LockCounter) {
	r := ws.pool.Get().(*record)
	r.mu.Lock()
	r.seq, r.txn, r.tick, r.c, r.w, r.gone = ws.seq.Add(1), w.Txn(), ws.tick.Load(), c, w, false
	r.mu.Unlock()
	ws.mu.Lock()
	ws.byWaiter[w] = r
	ws.mu.Unlock()
}

func (ws *waits) remove(w detect.Waiter) {
	ws.mu.Lock()
	r := ws.byWaiter[w]
	delete(ws.byWaiter, w)
	ws.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.gone, r.c, r.w = true, nil, nil
		r.mu.Unlock()
		ws.pool.Put(r)
	}
}

// advance moves the waits' clock by one tick.
func (ws *waits) advance() { ws.tick.Add(1) }

// exportable returns the waits reported exportAge ticks ago or before,
// in the order they were reported.
func (ws *waits) exportable() []ref {
	cur := ws.tick.Load()
	ws.mu.Lock()
	var out []ref
	for _, r := range ws.byWaiter {
		if r.tick+exportAge <= cur {
			out = append(out, ref{r, r.seq, r.txn})
		}
	}
	ws.mu.Unlock()
	slices.SortFunc(out, func(a, b ref) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// get returns the wait numbered seq, if it is tracked: a look through
// every wait, for the detector's rare questions.
func (ws *waits) get(seq uint64) (ref, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, r := range ws.byWaiter {
		if r.seq == seq {
			return ref{r, r.seq, r.txn}, true
		}
	}
	return ref{}, false
}

// lock locks the record and reports whether it still holds the wait.
func (x ref) lock() bool {
	x.r.mu.Lock()
	return !x.r.gone && x.r.seq == x.seq
}

// waitsFor reads whom the wait waits for now, from the manager's live
// lock table; false if the wait is over.
func (x ref) waitsFor() ([]txnlock.TxnID, bool) {
	defer x.r.mu.Unlock()
	if !x.lock() || !x.r.w.Active() {
		return nil, false
	}
	return x.r.w.WaitsFor(nil)
}

// describe reads the wait for a report; false if the wait is over.
func (x ref) describe() (entry, bool) {
	defer x.r.mu.Unlock()
	if !x.lock() || !x.r.w.Active() {
		return entry{}, false
	}
	lock, since := x.r.w.Requested()
	held := 0
	if x.r.c != nil {
		held = x.r.c.LocksHeld(x.txn)
	}
	return entry{Txn: x.txn, Lock: toWire(lock), LocksHeld: held, Since: since}, true
}

// fail ends the wait with err if it still waits.
func (x ref) fail(err error) bool {
	defer x.r.mu.Unlock()
	return x.lock() && x.r.w.Fail(err)
}
