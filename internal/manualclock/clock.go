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
		// changed, if not nil, is closed when timers changes (WaitPending).
		changed chan struct{}
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
	c.notifyLocked()
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
	c.notifyLocked()
}

// WaitPending blocks until exactly n timers are pending (armed, neither
// fired nor stopped): a test waits so until a goroutine has armed its
// timer before it advances the clock.
func (c *Clock) WaitPending(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.mu.timers) != n {
		if c.mu.changed == nil {
			c.mu.changed = make(chan struct{})
		}
		ch := c.mu.changed
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
}

// notifyLocked wakes the WaitPending calls: the pending timers changed.
func (c *Clock) notifyLocked() {
	if c.mu.changed != nil {
		close(c.mu.changed)
		c.mu.changed = nil
	}
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
			t.c.notifyLocked()
			return true
		}
	}
	return false
}
