// Package latch is the short-term mutex of the managers' stripes and of
// the transaction table: a sync.Mutex whose Lock, finding it held, tries
// again a few times before it sleeps.
//
// Why not sync.Mutex alone: its Lock spins on a held mutex only while the
// processor has nothing else to run. A storage engine runs more sessions
// than processors, so every processor usually has a goroutine ready, and a
// collision on a stripe — rare, but it happens to a few percent of the
// acquisitions with two cores — parks the goroutine on a semaphore and
// wakes it later: a microsecond or more for a critical section that lasts
// tens of nanoseconds (a few hash-table operations). Trying again a few
// times covers one such critical section; a holder that was descheduled
// mid-section costs the retries, then Lock sleeps as sync.Mutex does.
//
//	Lock:  TryLock ─ held ─▶ TryLock × Retries ─ still held ─▶ sync.Mutex.Lock
//	          │                    │
//	          └──── acquired ◀─────┘
//
// TryLock reads the mutex's state before it writes it, so a retry does not
// take the cache line away from the holder.
//
// Measured with pointlock's BenchmarkParallelDisjoint (-cpu 2, ten
// interleaved pairs; BENCHMARKS.md): 128 goroutines ran at 0.91 of 2 with
// sync.Mutex and 0.94–0.96 with the latch, and 2 goroutines did not slow
// down.
package latch

import "sync"

// Retries is how many times Lock tries again before it sleeps.
const Retries = 16

// Mutex is a sync.Mutex with a Lock that retries before it sleeps. The
// zero Mutex is unlocked. Unlock and TryLock are sync.Mutex's.
type Mutex struct{ sync.Mutex }

// Lock locks m, as sync.Mutex.Lock.
func (m *Mutex) Lock() {
	if m.Mutex.TryLock() {
		return
	}
	for range Retries {
		if m.Mutex.TryLock() {
			return
		}
	}
	m.Mutex.Lock()
}
