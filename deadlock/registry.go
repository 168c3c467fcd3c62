package deadlock

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// registry holds the reported waits, in slots hashed by transaction, each
// with its own small mutex: Block and Unblock take slot mutexes and
// nothing else, so the waits of a hot lock never meet on one mutex. It is
// the detector's only record of who waits; whom a wait waits for it asks
// the wait's manager (Waiter.Blockers, Waiter.WaitsFor) when a search
// needs to know, with the slot's mutex held, so that the waiter is not
// recycled meanwhile (its Unblock waits for the mutex).
//
// A wait that has ended (granted or failed) is forgotten by its waiter's
// Unblock, or before, by a probe (waiting) that finds it: on a hot lock
// the next waiter's Block probes the holder, whose wait was granted a
// moment ago, and takes its slot's mutex anyway, so it drops the wait
// there, and the holder's Unblock finds the slot empty and takes no
// mutex. No search follows an ended wait (design.go, "Stale
// waits"), so forgetting it early changes no search's answer.
//
// Lock order: Detector.mu, then one slot's mutex, then a manager's latch
// (inside the waiter's methods). Nothing takes two slots' mutexes at once.
type registry struct {
	slots [registrySlots]regSlot
}

// registrySlots is a power of two, about four times the waits of a
// thousand goroutines queued on one hot lock, so that most slots hold one
// wait or none and a report touches one cache line.
const registrySlots = 4096

// regSlot is one cache line: a slot's first wait is kept inline, and more
// in a slice of their own.
type regSlot struct {
	// mu guards first and more, and keeps each of their waiters from
	// being recycled while the detector asks it something.
	mu sync.Mutex
	// n is how many waits the slot holds (first, then *more), written
	// under mu and read without it: a probe of an empty slot (the usual
	// holder of a hot lock runs, it does not wait), or the Unblock of a
	// wait a probe forgot, takes no mutex.
	n atomic.Int32
	// _ pads the slot to a cache line. It is not the last field: a
	// zero-sized last field would add a word.
	_     [(64 - (unsafe.Sizeof(sync.Mutex{})+8+unsafe.Sizeof(wait{})+8)%64) % 64]byte
	first wait
	more  *[]wait // the waits after first; nil until a slot holds two
}

// slotIndex hashes txn to a slot: consecutive ids to consecutive slots,
// so that the waits of transactions begun one after the other are
// reported into neighbouring cache lines, which the processor fetches
// ahead; the higher bits are folded in, so ids a multiple of the table
// apart spread too.
func slotIndex(txn txnlock.TxnID) uint64 {
	const bits = 12 // log2(registrySlots)
	x := uint64(txn)
	return (x + x>>bits + x>>(2*bits)) & (registrySlots - 1)
}

func (r *registry) slot(txn txnlock.TxnID) *regSlot { return &r.slots[slotIndex(txn)] }

// lenLocked is the number of waits in the slot.
func (s *regSlot) lenLocked() int { return int(s.n.Load()) }

// atLocked returns the slot's i-th wait, i < lenLocked.
func (s *regSlot) atLocked(i int) *wait {
	if i == 0 {
		return &s.first
	}
	return &(*s.more)[i-1]
}

// appendLocked adds w after the slot's waits.
func (s *regSlot) appendLocked(w wait) {
	n := s.lenLocked()
	if n == 0 {
		s.first = w
	} else {
		if s.more == nil {
			s.more = new([]wait)
		}
		*s.more = append(*s.more, w)
	}
	s.n.Store(int32(n + 1))
}

// deleteLocked removes the slot's i-th wait; the last takes its place.
func (s *regSlot) deleteLocked(i int) {
	last := s.lenLocked() - 1
	*s.atLocked(i) = *s.atLocked(last)
	*s.atLocked(last) = wait{} // drop the references
	if last > 0 {
		*s.more = (*s.more)[:last-1]
	}
	s.n.Store(int32(last))
}

// add reports waiter w of txn with stamp seq. A second report of the
// same waiter replaces the first. It reports whether another active wait
// of txn was left unsearched as lone (markLone).
func (r *registry) add(w detect.Waiter, txn txnlock.TxnID, seq uint64) (lonesBefore bool) {
	s := r.slot(txn)
	s.mu.Lock()
	for i := range s.lenLocked() {
		x := s.atLocked(i)
		if x.waiter == w {
			x.txn, x.seq, x.lone = txn, seq, false
			s.mu.Unlock()
			return false
		}
		lonesBefore = lonesBefore || (x.lone && x.txn == txn && x.active())
	}
	s.appendLocked(wait{waiter: w, txn: txn, seq: seq})
	s.mu.Unlock()
	return lonesBefore
}

// markLone marks waiter w's wait, a wait of txn, as left unsearched
// (Detector.block), unless txn has another active wait reported by now,
// or w's wait is not recorded: it reports whether it marked it. A later
// add of txn's sees the mark, or markLone sees that wait.
func (r *registry) markLone(w detect.Waiter, txn txnlock.TxnID) bool {
	s := r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine *wait
	for i := range s.lenLocked() {
		switch x := s.atLocked(i); {
		case x.waiter == w:
			mine = x
		case x.txn == txn && x.active():
			return false
		}
	}
	if mine == nil {
		return false
	}
	mine.lone = true
	return true
}

// remove forgets waiter w's wait, and reports whether w's transaction
// has another active wait (a second Lock call in flight), whether or not
// a probe forgot w's wait first. An empty slot is read without its mutex:
// w's wait was forgotten already, or never recorded.
func (r *registry) remove(w detect.Waiter) (others bool) {
	txn := w.Txn()
	s := r.slot(txn)
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	for i := 0; i < s.lenLocked(); i++ {
		x := s.atLocked(i)
		switch {
		case x.waiter == w:
			s.deleteLocked(i)
			i--
		case x.txn == txn && x.active():
			others = true
		}
	}
	s.mu.Unlock()
	return others
}

// each calls fn for every active wait, slot by slot, with the slot's
// mutex held (an empty slot is passed over without it).
func (r *registry) each(fn func(txn txnlock.TxnID, seq uint64)) {
	for i := range r.slots {
		s := &r.slots[i]
		if s.n.Load() == 0 {
			continue
		}
		s.mu.Lock()
		for j := range s.lenLocked() {
			if x := s.atLocked(j); x.active() {
				fn(x.txn, x.seq)
			}
		}
		s.mu.Unlock()
	}
}

// with calls fn with the waiter of txn's wait of stamp seq, with its
// slot's mutex held so that the waiter is not recycled meanwhile, and
// reports whether the wait was found.
func (r *registry) with(txn txnlock.TxnID, seq uint64, fn func(w detect.Waiter)) bool {
	s := r.slot(txn)
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.lenLocked() {
		if x := s.atLocked(i); x.txn == txn && x.seq == seq {
			fn(x.waiter)
			return true
		}
	}
	return false
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
// other (design.go, "When a cycle closes"). It forgets the waits of
// the slot that have ended (the registry's doc).
func (r *registry) waiting(txn txnlock.TxnID) bool {
	s := r.slot(txn)
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	found := false
	for i := 0; i < s.lenLocked(); i++ {
		switch x := s.atLocked(i); {
		case !x.active():
			s.deleteLocked(i)
			i--
		case x.txn == txn:
			found = true
		}
	}
	s.mu.Unlock()
	return found
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
	for i := range s.lenLocked() {
		w := s.atLocked(i)
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

// fail fails the wait of txn made by w with stamp seq, if it is still
// reported and active, and reports whether it did. The slot's mutex keeps
// w from being recycled meanwhile.
func (r *registry) fail(txn txnlock.TxnID, w detect.Waiter, seq uint64, err error) bool {
	s := r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.lenLocked() {
		if x := s.atLocked(i); x.waiter == w && x.seq == seq {
			return w.Fail(err)
		}
	}
	return false
}

func (l *liveSource) describe(e *edge) {
	s := l.r.slot(e.txn)
	s.mu.Lock()
	for i := range s.lenLocked() {
		if x := s.atLocked(i); x.waiter == e.waiter && x.seq == e.seq {
			e.lock, e.since = e.waiter.Requested()
			break
		}
	}
	s.mu.Unlock()
	e.locksHeld = l.att.locksHeld(e.txn)
}

// flatten appends every active wait, with its blockers as its manager
// answers now, to dst and arena: a background pass's snapshot, read slot
// by slot with no other lock held, so it is not one moment's state. A
// pass confirms each cycle it finds in it against live state.
func (r *registry) flatten(dst []flatWait, arena []txnlock.TxnID) ([]flatWait, []txnlock.TxnID) {
	for i := range r.slots {
		s := &r.slots[i]
		s.mu.Lock()
		for j := range s.lenLocked() {
			w := s.atLocked(j)
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
