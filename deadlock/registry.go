package deadlock

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/txnlock/txnlock"
)

// registry holds the reported waits, in slots hashed by transaction, each
// with its own small mutex: Block and Unblock take one slot's mutex and
// nothing else, so the waits of a hot lock never meet on one mutex. It is
// the detector's only record of who waits; whom a wait waits for it asks
// the wait's manager (Waiter.Blockers, Waiter.WaitsFor) when a search
// needs to know, with the slot's mutex held, so that the waiter is not
// recycled meanwhile (its Unblock waits for the mutex).
//
// Lock order: Detector.mu, then one slot's mutex, then a manager's latch
// (inside the waiter's methods). Nothing takes two slots' mutexes at once.
type registry struct {
	slots [registrySlots]regSlot
}

// registrySlots is a power of two; a thousand waits on one hot lock share
// few slots.
const registrySlots = 1024

type regSlot struct {
	// mu guards waits, and keeps each of its waiters from being recycled
	// while the detector asks it something.
	mu    sync.Mutex
	waits []wait // the reported waits of the transactions that hash here
	// n is len(waits), written under mu and read without it: a probe
	// of an empty slot (the usual holder of a hot lock runs, it does not
	// wait) takes no mutex.
	n atomic.Int32
	_ [64 - (unsafe.Sizeof(sync.Mutex{})+unsafe.Sizeof([]wait{})+4)%64]byte
}

// slotIndex hashes txn to a slot (Fibonacci hashing: consecutive ids
// spread).
func slotIndex(txn txnlock.TxnID) uint64 {
	const shift = 64 - 10 // log2(registrySlots)
	return (uint64(txn) * 0x9e3779b97f4a7c15) >> shift
}

func (r *registry) slot(txn txnlock.TxnID) *regSlot { return &r.slots[slotIndex(txn)] }

// add reports w. A second report of the same waiter replaces the first.
func (r *registry) add(w wait) {
	s := r.slot(w.txn)
	s.mu.Lock()
	for i := range s.waits {
		if s.waits[i].waiter == w.waiter {
			s.waits[i] = w
			s.mu.Unlock()
			return
		}
	}
	s.waits = append(s.waits, w)
	s.n.Store(int32(len(s.waits)))
	s.mu.Unlock()
}

// remove forgets waiter w's wait, and reports whether there was one and
// whether w's transaction has another active wait (a second Lock call in
// flight).
func (r *registry) remove(w txnlock.Waiter) (found, others bool) {
	txn := w.Txn()
	s := r.slot(txn)
	s.mu.Lock()
	for i := 0; i < len(s.waits); i++ {
		x := &s.waits[i]
		switch {
		case x.waiter == w:
			last := len(s.waits) - 1
			s.waits[i] = s.waits[last]
			s.waits[last] = wait{} // drop the references
			s.waits = s.waits[:last]
			s.n.Store(int32(last))
			found = true
			i--
		case x.txn == txn && x.active():
			others = true
		}
	}
	s.mu.Unlock()
	return found, others
}

// count returns the number of reported waits, slot by slot: no counter
// that every Block and Unblock would share.
func (r *registry) count() int {
	n := 0
	for i := range r.slots {
		n += int(r.slots[i].n.Load())
	}
	return n
}

// waiting reports whether txn has an active wait. A Block that calls it
// has added its own wait first, under another slot's mutex, and a Block
// of txn adds txn's wait before it probes in turn: one of the two sees the
// other (the package doc, "When a cycle closes").
func (r *registry) waiting(txn txnlock.TxnID) bool {
	s := r.slot(txn)
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.waits {
		if s.waits[i].txn == txn && s.waits[i].active() {
			return true
		}
	}
	return false
}

// liveSource is the registry as a source of live views: it asks each
// waiter's manager, with the waiter's slot held.
type liveSource struct {
	r   *registry
	att *attachments
	buf []txnlock.TxnID
}

func (l *liveSource) waits(txn txnlock.TxnID, exact bool, fn func(w *wait, who []txnlock.TxnID)) {
	s := l.r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.waits {
		w := &s.waits[i]
		if w.txn != txn || !w.active() {
			continue
		}
		var ok bool
		if exact {
			l.buf, ok = w.waiter.WaitsFor(l.buf[:0])
		} else {
			l.buf, ok = w.waiter.Blockers(l.buf[:0])
		}
		if ok {
			fn(w, l.buf)
		}
	}
}

func (l *liveSource) fail(txn txnlock.TxnID, w txnlock.Waiter, seq uint64, err error) bool {
	s := l.r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.waits {
		if x := &s.waits[i]; x.waiter == w && x.seq == seq {
			return w.Fail(err)
		}
	}
	return false
}

func (l *liveSource) locksHeld(txn txnlock.TxnID) int { return l.att.locksHeld(txn) }

// flatten appends every active wait, with its blockers as its manager
// answers now, to dst and arena: a background pass's snapshot, read slot
// by slot with no other lock held, so it is not one moment's state. A
// pass confirms each cycle it finds in it against live state.
func (r *registry) flatten(dst []flatWait, arena []txnlock.TxnID) ([]flatWait, []txnlock.TxnID) {
	for i := range r.slots {
		s := &r.slots[i]
		s.mu.Lock()
		for j := range s.waits {
			w := &s.waits[j]
			if !w.active() {
				continue
			}
			b0 := len(arena)
			var ok bool
			if arena, ok = w.waiter.Blockers(arena); ok {
				dst = append(dst, flatWait{w: *w, b0: b0, b1: len(arena)})
			} else {
				arena = arena[:b0]
			}
		}
		s.mu.Unlock()
	}
	return dst, arena
}

// each calls fn for each active wait of txn, with its slot held; fn must
// not call the registry.
func (r *registry) each(txn txnlock.TxnID, fn func(w *wait)) {
	s := r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.waits {
		if w := &s.waits[i]; w.txn == txn && w.active() {
			fn(w)
		}
	}
}
