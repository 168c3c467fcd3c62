package deadlock

import (
	"slices"

	"github.com/txnlock/txnlock"
)

// history is a ring of the most recent deadlocks, oldest overwritten first,
// and the count that numbers them (DeadlockError.Seq).
type history struct {
	buf  []*txnlock.DeadlockError
	next int    // where the next one goes
	n    int    // how many are kept
	seq  uint64 // deadlocks added, kept or not
}

func newHistory(size int) history { return history{buf: make([]*txnlock.DeadlockError, size)} }

// nextSeq is the Seq that the next deadlock added gets: the core sets it
// on a verdict's error before the victim can see it, and settle adds it,
// both under the Detector's mutex, so nothing is added in between.
func (h *history) nextSeq() uint64 { return h.seq + 1 }

// add records e, whose Seq is nextSeq.
func (h *history) add(e *txnlock.DeadlockError) {
	h.seq++
	if len(h.buf) == 0 {
		return
	}
	h.buf[h.next] = e
	h.next = (h.next + 1) % len(h.buf)
	h.n = min(h.n+1, len(h.buf))
}

// list returns copies of the kept deadlocks, newest last and marked
// Latest.
func (h *history) list() []*txnlock.DeadlockError {
	out := make([]*txnlock.DeadlockError, 0, h.n)
	for i := range h.n {
		e := h.buf[(h.next-h.n+i+len(h.buf))%len(h.buf)]
		out = append(out, cloneDeadlock(e))
	}
	if len(out) > 0 {
		out[len(out)-1].Latest = true
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
