// Package latch is the short-term mutex of the managers' stripes and of
// the transaction table: a lock whose Lock, finding it held, tries again a
// few times before it sleeps.
//
// Why not sync.Mutex: its Lock spins on a held mutex only while the
// processor has nothing else to run. A storage engine runs more client
// connections than processors, so a processor usually has a goroutine ready, and a
// collision on a stripe — rare, but it happens to a few percent of the
// acquisitions with two cores — parks the goroutine on a semaphore and
// wakes it later: a microsecond or more, for a critical section of tens of
// nanoseconds (a few hash-table operations). Trying again a few times
// covers one such critical section; a holder that was descheduled
// mid-section costs the retries, then Lock sleeps.
//
// The state is one word; Lock and Unlock are a compare-and-swap and an
// add when nobody waits, inlined into the caller as sync.Mutex's are:
//
//	            CAS 0→1                       Add -1 → 0
//	unlocked ─────────────▶ locked ─────────────────────────▶ unlocked
//	    ▲                     │ another Lock: Retries × (load, CAS 0→1),
//	    │                     ▼ then Swap 2 and sleep on wake
//	    └──────────────── contended (2): Unlock stores 0 and leaves one
//	      Store 0, wake     token in wake; a woken Lock swaps 2 again
//
// A sleeper that wakes takes the lock by swapping 2 in (so that its own
// Unlock wakes the next sleeper) or, if a newcomer got it first, sleeps
// again. wake holds at most one token: a token left in it means no
// goroutine was sleeping when it was sent, so none is left asleep when a
// second one is dropped. Newcomers may overtake sleepers; the managers'
// fairness is their lock queues' FIFO, not the latch's, and a latch is held
// for nanoseconds.
//
// The protocol is checked exhaustively (model_test.go): a model with one
// step per atomic operation runs every interleaving of up to four
// goroutines, finds no overlap and no lost wake-up, and does find them in
// deliberately broken variants. The stress tests add -race and the real
// scheduler.
//
// BenchmarkParallelDisjoint of pointlock and rangelock (at 2 and 128
// goroutines) shows what it buys; BENCHMARKS.md has the figures.
//
// Profiles: the runtime's mutex profile knows only sync.Mutex, so a
// latch's contention shows instead in the CPU profile (lockSlow's
// retries) and in the block profile (its sleeps, a channel receive).
package latch

import "sync/atomic"

// Retries is how many times Lock tries again before it sleeps: a read of
// the state word, which stays in the spinner's cache until the holder
// writes it, so well under a microsecond in all. That covers a critical
// section that misses the cache a few times, and is about what sync.Mutex
// spins when it spins at all. Far fewer retries (16) make two goroutines
// on two processors sleep where sync.Mutex would have spun, which is
// slower; far more gain nothing.
const Retries = 400

const (
	unlocked  = 0
	locked    = 1
	contended = 2 // locked, and a Lock may be asleep
)

// Mutex is a mutual exclusion lock. The zero Mutex is unlocked. A Mutex
// must not be copied after first use.
type Mutex struct {
	state atomic.Int32
	// wake is the sleepers' channel (capacity 1), made by the first Lock
	// that sleeps.
	wake atomic.Pointer[chan struct{}]
}

// Lock locks m, sleeping (after Retries tries) while it is held.
func (m *Mutex) Lock() {
	if !m.state.CompareAndSwap(unlocked, locked) {
		m.lockSlow()
	}
}

// lockSlow retries, then sleeps until it takes m.
func (m *Mutex) lockSlow() {
	for range Retries {
		if m.state.Load() == unlocked && m.state.CompareAndSwap(unlocked, locked) {
			return
		}
	}
	wake := m.wakeChan()
	for m.state.Swap(contended) != unlocked {
		<-wake
	}
}

// TryLock locks m if it is unlocked and reports whether it did.
func (m *Mutex) TryLock() bool { return m.state.CompareAndSwap(unlocked, locked) }

// Unlock unlocks m. Unlocking an unlocked Mutex panics, as sync.Mutex's
// fatal error does: it is a bug in this module, never the caller's input.
func (m *Mutex) Unlock() {
	if s := m.state.Add(-1); s != unlocked {
		m.unlockSlow(s)
	}
}

// unlockSlow wakes a sleeper. It is not inlined, so that Unlock is.
//
//go:noinline
func (m *Mutex) unlockSlow(s int32) {
	if s != contended-1 {
		panic("latch: Unlock of unlocked Mutex")
	}
	m.state.Store(unlocked)
	select {
	case m.wakeChan() <- struct{}{}:
	default: // a token is pending: nobody sleeps on wake now
	}
}

// wakeChan returns m's wake channel, making it on first use.
func (m *Mutex) wakeChan() chan struct{} {
	if p := m.wake.Load(); p != nil {
		return *p
	}
	ch := make(chan struct{}, 1)
	if m.wake.CompareAndSwap(nil, &ch) {
		return ch
	}
	return *m.wake.Load()
}
