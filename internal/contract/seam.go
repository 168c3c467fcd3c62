package contract

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// SeamDetector is a txnlock.Detector, for one manager, that tests the
// seam rather than finds deadlocks in earnest; it is its own Graph. It logs each reported wait with the blockers the
// manager queued it behind, and at each Check what the manager answers
// when asked (Waiter.Blockers and Waiter.WaitsFor); it checks that the
// calls are consistent (no wait reported twice) and fails a waiter that
// closes a cycle of two transactions (enough for two holders that both
// upgrade). It is safe for concurrent use.
type SeamDetector struct {
	// counter is the manager attached; set by Attach, before any wait.
	counter detect.LockCounter
	mu      struct {
		sync.Mutex
		edges map[detect.Waiter]detect.Edge
		log   []string
		// unblocked lists the waits removed since the last Log, apart
		// from log: a waiter's goroutine unblocks itself, in no fixed
		// order with the manager's calls.
		unblocked []string
		problems  []string
	}
}

var (
	_ txnlock.Detector = (*SeamDetector)(nil)
	_ detect.Graph     = (*SeamDetector)(nil)
)

// NewSeamDetector returns an empty SeamDetector.
func NewSeamDetector() *SeamDetector {
	d := &SeamDetector{}
	d.mu.edges = map[detect.Waiter]detect.Edge{}
	return d
}

func (d *SeamDetector) logfLocked(format string, args ...any) {
	d.mu.log = append(d.mu.log, fmt.Sprintf(format, args...))
}

// Seam returns d: it is its own seam.
func (d *SeamDetector) Seam() detect.Detector { return d }

// FiniteWaits is false: a SeamDetector lets waits go on without a timeout.
func (d *SeamDetector) FiniteWaits() bool { return false }

// Attach notes the manager and returns d.
func (d *SeamDetector) Attach(c detect.LockCounter) detect.Graph {
	d.counter = c
	return d
}

// Detach does nothing.
func (d *SeamDetector) Detach() {}

// Block records e unless its wait is over already (granted before its
// goroutine came to Block), and always asks for a Check, so that the log
// shows every wait's.
func (d *SeamDetector) Block(e detect.Edge) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !e.Waiter.Active() {
		d.logfLocked("block %d: over already", uint64(e.Waiter.Txn()))
		return false
	}
	if _, ok := d.mu.edges[e.Waiter]; ok {
		d.mu.problems = append(d.mu.problems, "double block")
	}
	d.mu.edges[e.Waiter] = e
	behind, _ := e.Waiter.Blockers(nil)
	lock, _ := e.Waiter.Requested()
	d.logfLocked("block %d (%v, holds %d) behind %v", uint64(e.Waiter.Txn()), lock, d.counter.LocksHeld(e.Waiter.Txn()), sortedIDs(behind))
	return true
}

// Unblock forgets w's wait, if Block recorded it.
func (d *SeamDetector) Unblock(w detect.Waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.mu.edges[w]; !ok {
		return
	}
	delete(d.mu.edges, w)
	d.mu.unblocked = append(d.mu.unblocked, fmt.Sprint(uint64(w.Txn())))
}

// Check asks w's manager whom w waits for, logs the answers, and fails w
// if a blocker of its lock waits for a lock that w's transaction blocks.
func (d *SeamDetector) Check(w detect.Waiter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	blockers, ok := w.Blockers(nil)
	direct, ok2 := w.WaitsFor(nil)
	if !ok || !ok2 {
		d.logfLocked("check %d: over", uint64(w.Txn()))
		return nil
	}
	d.logfLocked("check %d: blockers %v, waits for %v", uint64(w.Txn()), sortedIDs(blockers), sortedIDs(direct))
	for _, b := range blockers {
		if b == w.Txn() {
			continue
		}
		for ow := range d.mu.edges {
			if ow.Txn() != b || !ow.Active() {
				continue
			}
			if theirs, ok := ow.Blockers(nil); ok && slices.Contains(theirs, w.Txn()) {
				d.logfLocked("check %d: cycle with %d", uint64(w.Txn()), uint64(b))
				mine, _ := w.Requested()
				other, _ := ow.Requested()
				return &txnlock.DeadlockError{Victim: w.Txn(), Cycle: []txnlock.CycleEntry{
					{Txn: w.Txn(), Lock: mine}, {Txn: b, Lock: other}}}
			}
		}
	}
	return nil
}

// Passed logs that a request of txn was granted past queued requests.
func (d *SeamDetector) Passed(txn txnlock.TxnID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logfLocked("passed %d", uint64(txn))
}

// Recheck logs a recheck of w's wait, if Block recorded it.
func (d *SeamDetector) Recheck(w detect.Waiter, txn txnlock.TxnID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.mu.edges[w]; ok {
		d.logfLocked("recheck %d", uint64(txn))
	}
}

func sortedIDs(ids []txnlock.TxnID) []txnlock.TxnID {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

// DetectDelay is 0: every wait reports at once.
func (d *SeamDetector) DetectDelay() time.Duration { return 0 }

// Stamp is always 0: the seam detector orders nothing.
func (d *SeamDetector) Stamp() uint64 { return 0 }

// Log returns the calls logged since the last Log, then the waits removed
// meanwhile (sorted), every problem found, and the number of waits left;
// and clears the log.
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
	fmt.Fprintf(&sb, "waits=%d\n", len(d.mu.edges))
	d.mu.log, d.mu.problems = nil, nil
	return sb.String()
}
