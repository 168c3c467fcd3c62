package contract

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
)

// SeamDetector is a txnlock.Detector that tests the seam rather than finds
// deadlocks in earnest. It logs the manager's calls, checks that they are
// consistent (no wait on an unknown resource, no wait reported twice, no
// resource dropped while a wait on it is active) and fails a waiter that
// closes a cycle of two transactions through resources (enough for two
// holders that both upgrade). It is safe for concurrent use.
type SeamDetector struct {
	mu struct {
		sync.Mutex
		next  txnlock.ResourceID
		res   map[txnlock.ResourceID][]txnlock.TxnID // blockers
		edges map[txnlock.Waiter]txnlock.WaitEdge
		log   []string
		// unblocked lists the waits removed since the last Log, apart
		// from log: a waiter's goroutine unblocks itself, in no fixed
		// order with the manager's calls.
		unblocked []string
		problems  []string
	}
}

var _ txnlock.Detector = (*SeamDetector)(nil)

// NewSeamDetector returns an empty SeamDetector.
func NewSeamDetector() *SeamDetector {
	d := &SeamDetector{}
	d.mu.res = map[txnlock.ResourceID][]txnlock.TxnID{}
	d.mu.edges = map[txnlock.Waiter]txnlock.WaitEdge{}
	return d
}

func (d *SeamDetector) logfLocked(format string, args ...any) {
	d.mu.log = append(d.mu.log, fmt.Sprintf(format, args...))
}

// NewResource logs "new resource rN".
func (d *SeamDetector) NewResource() txnlock.ResourceID {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.next++
	d.mu.res[d.mu.next] = nil
	d.logfLocked("new resource r%d", d.mu.next)
	return d.mu.next
}

// Block records e unless its wait is over already (granted before its
// goroutine came to Block), and always asks for a Check, so that the log
// shows every wait's.
func (d *SeamDetector) Block(e txnlock.WaitEdge) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !e.Waiter.Active() {
		d.logfLocked("block %d: over already", uint64(e.Waiter.Txn()))
		return false
	}
	if _, ok := d.mu.res[e.Resource]; !ok {
		d.mu.problems = append(d.mu.problems, fmt.Sprintf("block on unknown r%d", e.Resource))
	}
	if _, ok := d.mu.edges[e.Waiter]; ok {
		d.mu.problems = append(d.mu.problems, "double block")
	}
	d.mu.edges[e.Waiter] = e
	d.logfLocked("block %d -> r%d (%v, holds %d)", uint64(e.Waiter.Txn()), e.Resource, e.Lock, e.LocksHeld)
	return true
}

// Unblock forgets w's wait, if Block recorded it.
func (d *SeamDetector) Unblock(w txnlock.Waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.mu.edges[w]
	if !ok {
		return
	}
	delete(d.mu.edges, w)
	d.mu.unblocked = append(d.mu.unblocked, fmt.Sprintf("%d -> r%d", uint64(w.Txn()), e.Resource))
}

// SetBlockers logs "blockers rN = [...]".
func (d *SeamDetector) SetBlockers(r txnlock.ResourceID, b []txnlock.TxnID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.mu.res[r]; !ok {
		d.mu.problems = append(d.mu.problems, fmt.Sprintf("set blockers of unknown r%d", r))
	}
	s := slices.Clone(b)
	slices.Sort(s)
	d.mu.res[r] = s
	d.logfLocked("blockers r%d = %v", r, s)
}

// DropResource logs "drop rN".
func (d *SeamDetector) DropResource(r txnlock.ResourceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for w, e := range d.mu.edges {
		if e.Resource == r && w.Active() {
			d.mu.problems = append(d.mu.problems, fmt.Sprintf("drop r%d with active waits", r))
		}
	}
	delete(d.mu.res, r)
	d.logfLocked("drop r%d", r)
}

// Check fails w if it waits (through its resource) for a transaction that
// waits for a resource blocked by w's transaction.
func (d *SeamDetector) Check(w txnlock.Waiter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	me := d.mu.edges[w]
	for _, b := range d.mu.res[me.Resource] {
		if b == w.Txn() {
			continue
		}
		for ow, oe := range d.mu.edges {
			if ow.Txn() == b && ow.Active() && slices.Contains(d.mu.res[oe.Resource], w.Txn()) {
				d.logfLocked("check %d: cycle with %d", uint64(w.Txn()), uint64(b))
				return &txnlock.DeadlockError{Victim: w.Txn(), Cycle: []txnlock.CycleEntry{
					{Txn: w.Txn(), Lock: me.Lock}, {Txn: b, Lock: oe.Lock}}}
			}
		}
	}
	return nil
}

// DetectDelay is 0: every wait reports at once.
func (d *SeamDetector) DetectDelay() time.Duration { return 0 }

// Stamp is always 0: the seam detector orders nothing.
func (d *SeamDetector) Stamp() uint64 { return 0 }

// Log returns the calls logged since the last Log, then the waits removed
// meanwhile (sorted), every problem found, and the edges and resources
// left; and clears the log.
func (d *SeamDetector) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var sb strings.Builder
	for _, l := range d.mu.log {
		sb.WriteString(l + "\n")
	}
	if len(d.mu.unblocked) > 0 {
		slices.Sort(d.mu.unblocked)
		fmt.Fprintf(&sb, "unblocked %s\n", strings.Join(d.mu.unblocked, ", "))
		d.mu.unblocked = nil
	}
	for _, p := range d.mu.problems {
		sb.WriteString("PROBLEM: " + p + "\n")
	}
	fmt.Fprintf(&sb, "edges=%d resources=%d\n", len(d.mu.edges), len(d.mu.res))
	d.mu.log, d.mu.problems = nil, nil
	return sb.String()
}
