package rangelock

import (
	"sync/atomic"

	"github.com/txnlock/txnlock/locktree"
)

// emptyTreeMemory is what an empty locktree accounts; lock memory is what
// a tree accounts beyond it.
var emptyTreeMemory = locktree.New().Memory()

// memBudget is the manager's lock memory, counted sloppily: each stripe
// adds its changes to total only once they exceed slack, so that the hot
// path reads a shared word but rarely writes it. The error is at most
// slack per stripe.
type memBudget struct {
	total atomic.Int64 // bytes reported by every stripe
	max   int64        // Options.MaxLockMemory
	slack int64        // min(16 KiB, max/1024)
}

func (b *memBudget) init(max int64) {
	b.max = max
	b.slack = min(16<<10, max>>10)
}

// lockMemory is what s accounts for its point locks.
func (s *stripe) lockMemory() int64 { return s.pointMem }

// treeMemory is what f's tree accounts for its wide locks.
func (f *family) treeMemory() int64 { return f.tree.Memory() - emptyTreeMemory }

// syncMemLocked reports s's change in lock memory if it exceeds the slack.
func (s *stripe) syncMemLocked(b *memBudget) {
	if d := s.lockMemory() - s.memReported; d > b.slack || d < -b.slack {
		b.total.Add(d)
		s.memReported += d
	}
}

// syncMemExactLocked reports all of s's change in lock memory.
func (s *stripe) syncMemExactLocked(b *memBudget) {
	if d := s.lockMemory() - s.memReported; d != 0 {
		b.total.Add(d)
		s.memReported += d
	}
}

// syncTreeMemLocked reports all of the change in f's tree memory: wide
// locks change far more rarely than points. Every stripe is held.
func (f *family) syncTreeMemLocked() {
	if d := f.treeMemory() - f.treeReported; d != 0 {
		f.m.mem.total.Add(d)
		f.treeReported += d
	}
}

// resetMemLocked takes f out of the budget (Close, drop). Every stripe is
// held.
func (f *family) resetMemLocked() {
	for i := range f.stripes {
		s := &f.stripes[i]
		f.m.mem.total.Add(-s.memReported)
		s.memReported = 0
	}
	f.m.mem.total.Add(-f.treeReported)
	f.treeReported = 0
}

// lockEstimate is what acquiring r adds at most, roughly: a
// segment or point lock, its key bytes, its B-tree slot and index entry,
// and the split of a neighbour.
func lockEstimate(size int) int64 { return 128 + 2*int64(size) }

// fitsPointLocked reports whether granting a point lock on a key of
// keyLen bytes in stripe s keeps the manager within MaxLockMemory. s is
// held.
func (b *memBudget) fitsPointLocked(s *stripe, keyLen int) bool {
	est := lockEstimate(2 * keyLen) // the size of [k, k]
	total := b.total.Load()
	if total+b.slack+est <= b.max {
		return true // a stripe's unreported change is at most slack
	}
	return total+s.lockMemory()-s.memReported+est <= b.max
}

// fitsLocked reports whether granting q keeps the manager within
// MaxLockMemory. q's lock(s) are held.
func (b *memBudget) fitsLocked(f *family, q *request) bool {
	if q.point() {
		return b.fitsPointLocked(&f.stripes[q.stripe], len(q.key))
	}
	n := b.total.Load() + lockEstimate(q.r.Size())
	for i := range f.stripes {
		s := &f.stripes[i]
		n += s.lockMemory() - s.memReported
	}
	return n <= b.max
}
