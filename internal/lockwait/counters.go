package lockwait

import (
	"context"
	"errors"
	"time"

	"github.com/txnlock/txnlock"
)

// Counters are the per-stripe (or per-tree) statistics every manager keeps,
// guarded by the same lock as the structure they count, so that counting
// costs no atomic operation on the hot path.
type Counters struct {
	Acquired, Released, Waited            uint64
	WaitTime                              time.Duration
	Timeouts, Deadlocks, Canceled, Limits uint64
	Waiting                               int64
}

// EndWait records the end of a wait that began at since and ended with err
// (nil: granted).
func (c *Counters) EndWait(err error, since, now time.Time) {
	c.Waiting--
	c.WaitTime += now.Sub(since)
	switch {
	case err == nil:
	case errors.Is(err, txnlock.ErrLockTimeout):
		c.Timeouts++
	case errors.Is(err, txnlock.ErrDeadlock):
		c.Deadlocks++
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		c.Canceled++
	}
}

// BeginWait records that a request starts waiting.
func (c *Counters) BeginWait() {
	c.Waited++
	c.Waiting++
}

// AddTo adds the counters to s.
func (c *Counters) AddTo(s *txnlock.Stats) {
	s.Acquired += c.Acquired
	s.Released += c.Released
	s.Waited += c.Waited
	s.WaitTime += c.WaitTime
	s.Timeouts += c.Timeouts
	s.Deadlocks += c.Deadlocks
	s.Canceled += c.Canceled
	s.LockLimit += c.Limits
	s.Waiting += c.Waiting
}
