package latch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMutualExclusion: many more goroutines than processors increment a
// plain counter and check that no one else is inside; any gap in the
// exclusion shows as a lost increment, an overlap, or a race under -race.
func TestMutualExclusion(t *testing.T) {
	var (
		mu      Mutex
		n       int
		inside  atomic.Int32
		overlap atomic.Bool
		wg      sync.WaitGroup
	)
	const goroutines, each = 64, 2000
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				if inside.Add(1) != 1 {
					overlap.Store(true)
				}
				n++
				if i%64 == 0 {
					runtime.Gosched() // a holder descheduled mid-section
				}
				inside.Add(-1)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
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
