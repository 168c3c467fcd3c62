package pointlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// fakeDetector records the calls of the deadlock seam, checks that they are
// consistent (no active wait on an unknown resource, no double Block, no
// dropped resource with active waits), and finds the cycles of waiters that block each
// other directly through resources, failing the newest waiter, so that the
// seam can be tested before the deadlock package exists.
type fakeDetector struct {
	mu    sync.Mutex
	next  txnlock.ResourceID
	res   map[txnlock.ResourceID][]txnlock.TxnID
	edges map[txnlock.Waiter]txnlock.WaitEdge
	log   []string
	// unblocked lists the waits removed since the last takeLog, apart from
	// log: a waiter's goroutine unblocks itself, in no fixed order with
	// the manager's calls.
	unblocked []string
	problems  []string
	checks    map[txnlock.TxnID]int
}

// checked is how many times Check ran for txn's waiters.
func (d *fakeDetector) checked(txn txnlock.TxnID) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.checks[txn]
}

func newFakeDetector() *fakeDetector {
	return &fakeDetector{res: map[txnlock.ResourceID][]txnlock.TxnID{}, edges: map[txnlock.Waiter]txnlock.WaitEdge{}, checks: map[txnlock.TxnID]int{}}
}

func (d *fakeDetector) logf(format string, args ...any) {
	d.log = append(d.log, fmt.Sprintf(format, args...))
}

func (d *fakeDetector) NewResource() txnlock.ResourceID {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	d.res[d.next] = nil
	d.logf("new resource r%d", d.next)
	return d.next
}

// active reports whether w still waits (lockwait.Waiter says so).
func active(w txnlock.Waiter) bool { return w.(interface{ Active() bool }).Active() }

// Block records e unless its wait already ended (granted before its
// goroutine came to Block), and always asks for a Check, so that the log
// shows every wait's.
func (d *fakeDetector) Block(e txnlock.WaitEdge) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !active(e.Waiter) {
		d.logf("block %d: over already", uint64(e.Waiter.Txn()))
		return false
	}
	if _, ok := d.res[e.Resource]; !ok {
		d.problems = append(d.problems, fmt.Sprintf("block on unknown r%d", e.Resource))
	}
	if _, ok := d.edges[e.Waiter]; ok {
		d.problems = append(d.problems, "double block")
	}
	d.edges[e.Waiter] = e
	d.logf("block %d -> r%d (%v, holds %d)", uint64(e.Waiter.Txn()), e.Resource, e.Lock, e.LocksHeld)
	return true
}

func (d *fakeDetector) Unblock(w txnlock.Waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.edges[w]
	if !ok {
		return // Block found the wait over already
	}
	delete(d.edges, w)
	d.unblocked = append(d.unblocked, fmt.Sprintf("%d -> r%d", uint64(w.Txn()), e.Resource))
}

func (d *fakeDetector) SetBlockers(r txnlock.ResourceID, b []txnlock.TxnID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.res[r]; !ok {
		d.problems = append(d.problems, fmt.Sprintf("set blockers of unknown r%d", r))
	}
	s := slices.Clone(b)
	slices.Sort(s)
	d.res[r] = s
	d.logf("blockers r%d = %v", r, s)
}

func (d *fakeDetector) DropResource(r txnlock.ResourceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for w, e := range d.edges {
		if e.Resource == r && active(w) {
			d.problems = append(d.problems, fmt.Sprintf("drop r%d with active waits", r))
		}
	}
	delete(d.res, r)
	d.logf("drop r%d", r)
}

// Check fails w if it waits (through its resource) for a transaction that
// waits for a resource blocked by w's transaction: a two-transaction cycle,
// enough for the upgrade case.
func (d *fakeDetector) Check(w txnlock.Waiter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer func() { d.checks[w.Txn()]++ }() // after the victim is failed
	me := d.edges[w]
	for _, b := range d.res[me.Resource] {
		if b == w.Txn() {
			continue
		}
		for ow, oe := range d.edges {
			if ow.Txn() == b && active(ow) && slices.Contains(d.res[oe.Resource], w.Txn()) {
				d.logf("check %d: cycle with %d", uint64(w.Txn()), uint64(b))
				err := &txnlock.DeadlockError{Victim: w.Txn(), Cycle: []txnlock.CycleEntry{
					{Txn: w.Txn(), Lock: me.Lock}, {Txn: b, Lock: oe.Lock}}}
				w.Fail(err) // so that the test sees the waiter leave once checked
				return err
			}
		}
	}
	return nil
}

func (d *fakeDetector) DetectDelay() time.Duration { return 0 }

// Stamp is not recorded: the fake orders nothing.
func (d *fakeDetector) Stamp() uint64 { return 0 }

// takeLog returns and clears the call log, with any problems found.
func (d *fakeDetector) takeLog() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var sb strings.Builder
	for _, l := range d.log {
		sb.WriteString(l + "\n")
	}
	if len(d.unblocked) > 0 {
		slices.Sort(d.unblocked)
		fmt.Fprintf(&sb, "unblocked %s\n", strings.Join(d.unblocked, ", "))
		d.unblocked = nil
	}
	for _, p := range d.problems {
		sb.WriteString("PROBLEM: " + p + "\n")
	}
	fmt.Fprintf(&sb, "edges=%d resources=%d\n", len(d.edges), len(d.res))
	d.log, d.problems = nil, nil
	return sb.String()
}

// TestWaitRefAfterRecycling: a waiter's lock reference names its own key,
// even when the entry it waits on was recycled from an entry on which
// others waited for another key (the entry keeps a copy of its key for
// the detector's reports, and must make a new one with a new key).
func TestWaitRefAfterRecycling(t *testing.T) {
	det := newFakeDetector()
	m, err := New(Options{Stripes: 1, WaitOptions: txnlock.WaitOptions{Detector: det}})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	wait := func(holder, waiter txnlock.TxnID, key string) {
		r := txnlock.Point([]byte(key))
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: holder, Range: r, Mode: txnlock.Exclusive}))
		err := m.Lock(ctx, txnlock.Request{Txn: waiter, Range: r, Mode: txnlock.Exclusive, Timeout: time.Millisecond})
		require.ErrorIs(t, err, txnlock.ErrLockTimeout)
		require.NoError(t, m.UnlockAll(holder)) // the entry goes to the free list
		require.NoError(t, m.UnlockAll(waiter))
	}
	wait(1, 2, "a")
	wait(3, 4, "b") // one stripe, one free entry: "b" gets "a"'s entry
	det.mu.Lock()
	defer det.mu.Unlock()
	var blocks []string
	for _, l := range det.log {
		if strings.HasPrefix(l, "block ") {
			blocks = append(blocks, l)
		}
	}
	require.Len(t, blocks, 2)
	require.Contains(t, blocks[0], "[a]")
	require.Contains(t, blocks[1], "[b]")
	require.Empty(t, det.problems)
}
