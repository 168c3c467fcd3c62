package latch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hammer runs goroutines goroutines that each take mu each times and run
// section(i) inside, and fails the test if they have not all finished
// within a minute (a correctness guard, not a timing: a lost wake-up
// leaves a goroutine asleep for good).
func hammer(t *testing.T, mu *Mutex, goroutines, each int, section func(i int)) {
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				section(i)
				mu.Unlock()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("goroutines still asleep: a wake-up was lost")
	}
}

// TestMutualExclusion: many more goroutines than processors increment a
// plain counter and check that no one else is inside; any gap in the
// exclusion shows as a lost increment, an overlap, or a race under -race.
func TestMutualExclusion(t *testing.T) {
	var (
		mu      Mutex
		n       int
		inside  atomic.Int32
		overlap atomic.Bool
	)
	const goroutines, each = 64, 2000
	hammer(t, &mu, goroutines, each, func(i int) {
		if inside.Add(1) != 1 {
			overlap.Store(true)
		}
		n++
		if i%64 == 0 {
			runtime.Gosched() // a holder descheduled mid-section
		}
		inside.Add(-1)
	})
	require.False(t, overlap.Load(), "two goroutines were inside at once")
	require.Equal(t, goroutines*each, n)
}

// TestLockWaitsForUnlock: Lock on a held latch returns only after Unlock,
// past its retries (the holder keeps it until told to let go).
func TestLockWaitsForUnlock(t *testing.T) {
	var mu Mutex
	mu.Lock()
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		mu.Lock()
		got.Store(true)
		mu.Unlock()
		close(done)
	}()
	for range 100 {
		runtime.Gosched()
	}
	require.False(t, got.Load(), "Lock returned while the latch was held")
	require.False(t, mu.TryLock())
	mu.Unlock()
	<-done
	require.True(t, got.Load())
	require.True(t, mu.TryLock(), "the waiter did not unlock")
	mu.Unlock()
}

// TestSleepersAllWake: more goroutines than processors hold the latch
// across a Gosched, so most acquisitions sleep; every goroutine must
// finish (a lost wake-up hangs the test) and the count must be exact.
func TestSleepersAllWake(t *testing.T) {
	var (
		mu Mutex
		n  int
	)
	const goroutines, each = 32, 500
	hammer(t, &mu, goroutines, each, func(int) {
		n++
		runtime.Gosched()
	})
	require.Equal(t, goroutines*each, n)
	require.True(t, mu.TryLock(), "left locked")
	require.Equal(t, int32(locked), mu.state.Load())
	mu.Unlock()
	require.Equal(t, int32(unlocked), mu.state.Load())
}

func TestUnlockOfUnlockedPanics(t *testing.T) {
	var mu Mutex
	require.Panics(t, mu.Unlock)
}

func TestUncontendedAllocatesNothing(t *testing.T) {
	var mu Mutex
	require.Zero(t, testing.AllocsPerRun(100, func() {
		mu.Lock()
		mu.Unlock()
	}))
	require.Nil(t, mu.wake.Load(), "an uncontended latch made its channel")
}
