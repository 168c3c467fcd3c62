package deadlock

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/txnlock/txnlock"
)

// dormant holds the waits that no search can reach, outside the graph and
// its mutex.
//
// A search enters a transaction only through a resource that it blocks.
// So while transaction T blocks no resource of the live graph, T's wait
// cannot be on a cycle, and no search needs it: it is dormant. That is the
// common wait on a hot lock: a transaction that holds nothing else queues
// behind the holder. Its Block and Unblock then cost one slot mutex each,
// and the detector's mutex and graph never see the wait.
//
//	Block(T waits for r)         SetBlockers(r', [.., T, ..]), under Detector.mu
//	  slot(T).mu:                  slot(T).mu:
//	    a blocker hashes here?       blocking++
//	    no: park the wait ──────▶    T's parked waits move into the graph
//	    yes: into the graph          (promoted), as a Block would put them
//
// Each slot counts the (resource, blocker) pairs of the live graph whose
// blocker hashes to it, and park refuses to park a wait while its slot's
// count is not zero. Park and promotion meet under the slot's mutex, so
// the invariant holds at every moment:
//
//	no transaction with a parked wait that is still active blocks a
//	resource of the live graph.
//
// (A wait that has ended is ignored by every search; promotion leaves it
// for its goroutine to unpark.)
//
// A promoted wait is a graph wait like any other: SetBlockers notes it as
// a suspect if the resource has waits, and a later Block sees it waiting.
// The counts change only with the live graph's blockers (graph.setBlockers,
// graph.deleteResource), under Detector.mu; a snapshot has no dormant
// table. Two transactions that share a slot only make a wait take the
// graph's path when it need not.
//
// Lock order: Detector.mu, then one slot's mu. Park and unpark take a
// slot's mu alone.
type dormant struct {
	slots [dormantSlots]dormantSlot
}

// dormantSlots is a power of two; a thousand waits on one hot lock share
// few slots.
const dormantSlots = 1024

type dormantSlot struct {
	// mu guards waits, and orders park against addBlockerLocked.
	mu sync.Mutex
	// blocking counts the (resource, blocker) pairs of the live graph
	// whose blocker hashes to this slot. It grows under mu (a new blocker's
	// parked waits move out in the same critical section) and shrinks
	// without it: a park that misses a decrement only takes the graph's
	// path.
	blocking atomic.Int32
	// waits are the parked waits of the transactions that hash here.
	waits []parkedWait
	_     [64 - (unsafe.Sizeof(sync.Mutex{})+8+unsafe.Sizeof([]parkedWait{}))%64]byte
}

// parkedWait is a parked wait and its transaction.
type parkedWait struct {
	txn txnlock.TxnID
	e   txnlock.WaitEdge
}

func (t *dormant) slot(txn txnlock.TxnID) *dormantSlot { return &t.slots[slotIndex(txn)] }

// slotIndex hashes txn to a slot (Fibonacci hashing: consecutive ids
// spread).
func slotIndex(txn txnlock.TxnID) uint64 {
	const shift = 64 - 10 // log2(dormantSlots)
	return (uint64(txn) * 0x9e3779b97f4a7c15) >> shift
}

// park keeps e out of the graph if its transaction blocks nothing, and
// reports whether it did (or whether there is nothing to record: no
// waiter, or a wait that has already ended). False: the wait must go into
// the graph.
func (t *dormant) park(e txnlock.WaitEdge) bool {
	if e.Waiter == nil || !e.Waiter.Active() {
		return true // granted or failed before it came: nothing to record
	}
	txn := e.Waiter.Txn()
	s := t.slot(txn)
	s.mu.Lock()
	ok := s.blocking.Load() == 0
	if ok {
		s.waits = append(s.waits, parkedWait{txn, e})
	}
	s.mu.Unlock()
	return ok
}

// unpark removes w's parked wait and reports whether there was one. False:
// the wait is in the graph (it was never parked, or it was promoted), or
// there is none.
func (t *dormant) unpark(w txnlock.Waiter) bool {
	s := t.slot(w.Txn())
	s.mu.Lock()
	found := false
	for i := range s.waits {
		if s.waits[i].e.Waiter == w {
			last := len(s.waits) - 1
			s.waits[i] = s.waits[last]
			s.waits[last] = parkedWait{} // drop the references
			s.waits = s.waits[:last]
			found = true
			break
		}
	}
	s.mu.Unlock()
	return found
}

// addBlockerLocked counts txn as a blocker of one more resource and moves
// its parked waits into g. Detector.mu is held.
func (t *dormant) addBlockerLocked(txn txnlock.TxnID, g *graph) {
	s := t.slot(txn)
	s.mu.Lock()
	s.blocking.Add(1)
	for i := 0; i < len(s.waits); {
		// A wait that has ended stays: no search follows it, and its
		// goroutine, about to unpark it, then skips Detector.mu (on a hot
		// lock the new blocker is the waiter just granted). A parked
		// waiter cannot be recycled before its goroutine has unparked it
		// under s.mu, so asking whether it is active is safe.
		p := s.waits[i]
		if p.txn != txn || !p.e.Waiter.Active() {
			i++
			continue
		}
		last := len(s.waits) - 1
		s.waits[i] = s.waits[last]
		s.waits[last] = parkedWait{}
		s.waits = s.waits[:last]
		g.block(p.e) // nothing if the wait ended meanwhile
	}
	s.mu.Unlock()
}

// removeBlockerLocked undoes one addBlockerLocked. Detector.mu is held.
func (t *dormant) removeBlockerLocked(txn txnlock.TxnID) {
	t.slot(txn).blocking.Add(-1)
}

// count returns the number of parked waits.
func (t *dormant) count() int {
	n := 0
	for i := range t.slots {
		s := &t.slots[i]
		s.mu.Lock()
		n += len(s.waits)
		s.mu.Unlock()
	}
	return n
}
