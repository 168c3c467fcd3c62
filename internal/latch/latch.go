// Package latch is the short-term mutex of rangelock's stripes: a
// sync.Mutex whose Lock, finding it held, tries again a few hundred times
// before it sleeps.
//
// Why not sync.Mutex alone: its Lock spins on a held mutex only while the
// processor has nothing else to run. A storage engine runs more sessions
// than processors, so a processor usually has a goroutine ready, and a
// collision on a stripe — rare, but it happens to a few percent of the
// acquisitions with two cores — parks the goroutine on a semaphore and
// wakes it later: a microsecond or more, for a critical section of tens of
// nanoseconds. Trying again covers one such critical section; a holder
// that was descheduled mid-section costs the retries, then Lock sleeps in
// sync.Mutex.Lock, with its fairness.
//
//	Lock:  TryLock ─ held ─▶ TryLock × Retries ─ still held ─▶ sync.Mutex.Lock
//	          │                    │
//	          └──── acquired ◀─────┘
//
// TryLock reads the state before it writes it, so a retry does not take
// the cache line from the holder. Lock is not inlined (TryLock is too big
// for the inliner), which costs an uncontended Lock a call: pointlock's
// stripes, whose uncontended path is measured against a bare mutex, stay
// sync.Mutex.
//
// Profiles: the retries show in the CPU profile (lockSlow), the sleeps in
// the mutex profile, as sync.Mutex's.
package latch

import "sync"

// Retries is how many times Lock tries again before it sleeps: about half
// a microsecond on this project's machine, about what sync.Mutex spins
// when it spins at all. With rangelock's BenchmarkParallelDisjoint, range
// at 128 goroutines ran at 0.91 of 2 with the retries and at 0.79 without
// (six interleaved pairs; rangelock/BENCHMARKS.md).
const Retries = 400

// Mutex is a sync.Mutex whose Lock retries before it sleeps. The zero
// Mutex is unlocked; Unlock and TryLock are sync.Mutex's.
type Mutex struct{ sync.Mutex }

// Lock locks m.
func (m *Mutex) Lock() {
	if !m.Mutex.TryLock() {
		m.lockSlow()
	}
}

// lockSlow retries, then sleeps in sync.Mutex.Lock.
func (m *Mutex) lockSlow() {
	for range Retries {
		if m.Mutex.TryLock() {
			return
		}
	}
	m.Mutex.Lock()
}
