package deadlock

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// history is a ring of the most recent deadlocks, oldest overwritten first.
type history struct {
	buf  []*txnlock.DeadlockError
	next int // where the next one goes
	n    int // how many are kept
}

func newHistory(size int) history { return history{buf: make([]*txnlock.DeadlockError, size)} }

func (h *history) add(e *txnlock.DeadlockError) {
	if len(h.buf) == 0 {
		return
	}
	h.buf[h.next] = e
	h.next = (h.next + 1) % len(h.buf)
	h.n = min(h.n+1, len(h.buf))
}

// list returns copies of the kept deadlocks, newest last.
func (h *history) list() []*txnlock.DeadlockError {
	out := make([]*txnlock.DeadlockError, 0, h.n)
	for i := range h.n {
		e := h.buf[(h.next-h.n+i+len(h.buf))%len(h.buf)]
		out = append(out, cloneDeadlock(e))
	}
	return out
}

// cloneDeadlock returns a copy of e that shares no slice with it.
func cloneDeadlock(e *txnlock.DeadlockError) *txnlock.DeadlockError {
	c := *e
	c.Cycle = cloneEntries(e.Cycle)
	c.Path = cloneEntries(e.Path)
	return &c
}

func cloneEntries(in []txnlock.CycleEntry) []txnlock.CycleEntry {
	if in == nil {
		return nil
	}
	out := slices.Clone(in)
	for i := range out {
		out[i].Blockers = slices.Clone(out[i].Blockers)
		out[i].Lock.Range = out[i].Lock.Range.Clone()
	}
	return out
}
