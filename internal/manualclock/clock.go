// Package manualclock is a txnlock.Clock whose time moves only when a test
// says so, for deterministic timeouts and detection budgets.
package manualclock

import (
	"sync"
	"time"

	"github.com/txnlock/txnlock"
)

// Clock is a manual txnlock.Clock. The zero value starts at the zero time;
// New starts at a fixed, readable instant.
type Clock struct {
	mu struct {
		sync.Mutex
		now    time.Time
		timers []*timer // pending, unordered
	}
}

// New returns a clock at 2026-01-01 00:00:00 UTC.
func New() *Clock {
	c := &Clock{}
	c.mu.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.now
}

// NewTimer returns a timer that fires when Advance moves the clock d or
// more past now.
func (c *Clock) NewTimer(d time.Duration) txnlock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.mu.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.mu.now
		return t
	}
	c.mu.timers = append(c.mu.timers, t)
	return t
}

// Advance moves the clock forward by d and fires every timer that is due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.now = c.mu.now.Add(d)
	keep := c.mu.timers[:0]
	for _, t := range c.mu.timers {
		if !t.at.After(c.mu.now) {
			t.ch <- c.mu.now
			continue
		}
		keep = append(keep, t)
	}
	clear(c.mu.timers[len(keep):])
	c.mu.timers = keep
}

// Pending is the number of timers not yet fired or stopped: a test can wait
// until a waiter has armed its timeout before advancing the clock.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.timers)
}

type timer struct {
	c  *Clock
	at time.Time
	ch chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, o := range t.c.mu.timers {
		if o == t {
			t.c.mu.timers = append(t.c.mu.timers[:i], t.c.mu.timers[i+1:]...)
			return true
		}
	}
	return false
}
