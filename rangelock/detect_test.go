package rangelock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"go.uber.org/goleak"
)

// The answers the detector gets when it asks a waiter (detect.go): a
// fake detector records the reported waits, and the tests ask their
// Waiters, as a search would, with no latch held.

// askDetector is a txnlock.Detector, its own seam and Graph, that records
// each reported wait and never searches (Block returns false). With a gate, Unblock waits until
// the gate opens: a test can ask a waiter whose wait ended but is still
// reported (the moment the Source must answer false).
type askDetector struct {
	counter   detect.LockCounter // the manager, once attached
	mu        sync.Mutex         // guards edges, unblocked and rechecked
	changed   sync.Cond          // on mu: edges or unblocked grew
	edges     []detect.Edge      // Blockers copied: Block may not keep them
	unblocked []detect.Waiter
	rechecked []txnlock.TxnID
	stamp     atomic.Uint64
	gate      chan struct{} // nil: Unblock returns at once
	openOnce  sync.Once
}

func (d *askDetector) Seam() detect.Detector { return d }

func (d *askDetector) FiniteWaits() bool { return false }

func (d *askDetector) Attach(c detect.LockCounter) detect.Graph {
	d.counter = c
	return d
}

func (d *askDetector) Detach() {}

func (d *askDetector) Block(e detect.Edge) bool {
	d.mu.Lock()
	d.edges = append(d.edges, e)
	d.changedLocked()
	d.mu.Unlock()
	return false
}

func (d *askDetector) Unblock(w detect.Waiter) {
	d.mu.Lock()
	d.unblocked = append(d.unblocked, w)
	d.changedLocked()
	d.mu.Unlock()
	if d.gate != nil {
		<-d.gate
	}
}

func (d *askDetector) Check(detect.Waiter) error { panic("askDetector: Check after Block said false") }

func (d *askDetector) Passed(txnlock.TxnID) {}

func (d *askDetector) Recheck(_ detect.Waiter, txn txnlock.TxnID) {
	d.mu.Lock()
	d.rechecked = append(d.rechecked, txn)
	d.mu.Unlock()
}

// takeRechecked returns the transactions of the waits rechecked so far,
// sorted, and forgets them.
func (d *askDetector) takeRechecked() []txnlock.TxnID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Sorted(slices.Values(d.rechecked))
	d.rechecked = nil
	return out
}

func (d *askDetector) Stamp() uint64 { return d.stamp.Add(1) }

func (d *askDetector) DetectDelay() time.Duration { return 0 }

// open lets every Unblock return, now and later.
func (d *askDetector) open() {
	if d.gate != nil {
		d.openOnce.Do(func() { close(d.gate) })
	}
}

// changedLocked wakes the tests waiting for a report. d.mu is held.
func (d *askDetector) changedLocked() {
	if d.changed.L == nil {
		d.changed.L = &d.mu
	}
	d.changed.Broadcast()
}

// awaitLocked sleeps until the next report. d.mu is held.
func (d *askDetector) awaitLocked() {
	if d.changed.L == nil {
		d.changed.L = &d.mu
	}
	d.changed.Wait()
}

// edge returns the last reported wait of txn, once there is one.
func (d *askDetector) edge(t *testing.T, txn txnlock.TxnID) detect.Edge {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for i := len(d.edges) - 1; i >= 0; i-- {
			if d.edges[i].Waiter.Txn() == txn {
				return d.edges[i]
			}
		}
		d.awaitLocked()
	}
}

// awaitUnblock returns once Unblock(w) has been called.
func (d *askDetector) awaitUnblock(t *testing.T, w detect.Waiter) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for !slices.Contains(d.unblocked, w) {
		d.awaitLocked()
	}
}

// askHarness is a Manager with an askDetector, and the Lock calls that
// wait in goroutines of their own.
type askHarness struct {
	t  *testing.T
	m  *Manager
	d  *askDetector
	wg sync.WaitGroup
}

// newAskHarness returns a manager with 4 stripes (wide requests take
// several latches) and WaitForever: waits end by the test's steps, or by
// Close at cleanup, after which no goroutine is left.
func newAskHarness(t *testing.T, gate bool) *askHarness {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	d := &askDetector{}
	if gate {
		d.gate = make(chan struct{})
	}
	opts := Options{Stripes: 4}
	opts.Detector, opts.LockTimeout = d, txnlock.WaitForever
	m, err := New(opts)
	require.NoError(t, err)
	h := &askHarness{t: t, m: m, d: d}
	t.Cleanup(func() {
		d.open()
		_ = m.Close() // fails the waits the test left
		h.wg.Wait()
	})
	return h
}

func (h *askHarness) lock(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) {
	h.t.Helper()
	require.NoError(h.t, h.m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: r, Mode: mode}))
}

// wait starts a Lock that must wait and returns its Waiter, once the
// wait is reported, and the channel of its result.
func (h *askHarness) wait(ctx context.Context, txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) (detect.Waiter, chan error) {
	h.t.Helper()
	done := make(chan error, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		done <- h.m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: mode})
	}()
	return h.d.edge(h.t, txn).Waiter, done
}

// ask returns w's answers to Blockers and WaitsFor, which must be given.
func ask(t *testing.T, w detect.Waiter) (blockers, waitsFor []txnlock.TxnID) {
	t.Helper()
	blockers, ok := w.Blockers(nil)
	require.True(t, ok, "Blockers of %v: the wait is over", w.Txn())
	waitsFor, ok = w.WaitsFor(nil)
	require.True(t, ok, "WaitsFor of %v: the wait is over", w.Txn())
	return blockers, waitsFor
}

func ids(txns ...txnlock.TxnID) []txnlock.TxnID { return txns }

func incl(t *testing.T, start, end string) txnlock.Range {
	r, err := txnlock.Inclusive([]byte(start), []byte(end))
	require.NoError(t, err)
	return r
}

const (
	sh = txnlock.Shared
	ex = txnlock.Exclusive
)

// TestSourceContraction: every point waiter of a key with no wide waiter
// is blocked by the key's holders, wherever it is in the queue, from the
// live table; WaitsFor is the rule of Status.
func TestSourceContraction(t *testing.T) {
	h := newAskHarness(t, false)
	k := txnlock.Point([]byte("k"))
	h.lock(1, k, ex)
	ws := map[txnlock.TxnID]detect.Waiter{}
	modes := map[txnlock.TxnID]txnlock.Mode{2: ex, 3: sh, 4: sh, 5: ex}
	var done2 chan error
	var last uint64
	for txn := txnlock.TxnID(2); txn <= 5; txn++ {
		var done chan error
		ws[txn], done = h.wait(context.Background(), txn, k, modes[txn])
		if txn == 2 {
			done2 = done
		}
		e := h.d.edge(t, txn)
		require.Greater(t, e.Stamp, last, "stamps in queue order")
		last = e.Stamp
	}
	wantWaitsFor := map[txnlock.TxnID][]txnlock.TxnID{2: ids(1), 3: ids(2), 4: ids(2), 5: ids(3, 4)}
	for txn := txnlock.TxnID(2); txn <= 5; txn++ {
		b, wf := ask(t, ws[txn])
		require.Equal(t, ids(1), b, "Blockers of %v: the holder, not the queue", txn)
		require.Equal(t, wantWaitsFor[txn], wf, "WaitsFor of %v", txn)
	}

	// The answers follow the table: 2 is granted, and blocks the rest.
	require.NoError(t, h.m.Unlock(1, txnlock.DefaultColumnFamily, k))
	require.NoError(t, <-done2)
	wantWaitsFor = map[txnlock.TxnID][]txnlock.TxnID{3: ids(2), 4: ids(2), 5: ids(3, 4)}
	for txn := txnlock.TxnID(3); txn <= 5; txn++ {
		b, wf := ask(t, ws[txn])
		require.Equal(t, ids(2), b, "Blockers of %v after the grant", txn)
		require.Equal(t, wantWaitsFor[txn], wf, "WaitsFor of %v after the grant", txn)
	}
}

// TestSourceBehindWide: a point waiter behind an overlapping wide waiter
// is answered with its nearest blockers, the wide waiter ahead (and the
// holders that waiter does not wait for), and confirmed with its own
// conflicts.
func TestSourceBehindWide(t *testing.T) {
	h := newAskHarness(t, false)
	h.lock(1, txnlock.Point([]byte("b")), ex)
	wide, _ := h.wait(context.Background(), 2, incl(t, "a", "c"), ex)
	free, _ := h.wait(context.Background(), 3, txnlock.Point([]byte("a")), ex) // nobody holds a
	held, _ := h.wait(context.Background(), 4, txnlock.Point([]byte("b")), sh)
	h.lock(5, txnlock.Point([]byte("z")), ex) // outside the wide range: no wait

	b, wf := ask(t, wide)
	require.Equal(t, ids(1), b)
	require.Equal(t, ids(1), wf)
	b, wf = ask(t, free)
	require.Equal(t, ids(2), b, "a point waiter behind a wide one waits for it")
	require.Equal(t, ids(2), wf)
	b, wf = ask(t, held)
	require.Equal(t, ids(2), b, "the wide waiter ahead, which waits for the holder itself")
	require.Equal(t, ids(1, 2), wf, "its own conflicts: the holder and the wide waiter ahead")
}

// TestSourceWide: a wide waiter is blocked by every conflicting holder in
// its range, point or wide, in whatever stripes, and by the conflicting
// wide waiters ahead.
func TestSourceWide(t *testing.T) {
	h := newAskHarness(t, false)
	h.lock(1, txnlock.Point([]byte("a")), ex)
	h.lock(1, txnlock.Point([]byte("q")), sh)
	h.lock(2, incl(t, "m", "p"), sh)
	h.lock(6, txnlock.Point([]byte("zz")), ex) // outside both ranges below
	x, _ := h.wait(context.Background(), 3, incl(t, "a", "z"), ex)
	s, _ := h.wait(context.Background(), 4, incl(t, "n", "o"), sh)

	b, wf := ask(t, x)
	require.Equal(t, ids(1, 2), b)
	require.Equal(t, ids(1, 2), wf)
	require.Equal(t, 0, h.d.counter.LocksHeld(3))
	require.Equal(t, 2, h.d.counter.LocksHeld(1), "a and q")
	require.Equal(t, 1, h.d.counter.LocksHeld(2), "[m, p]")
	b, wf = ask(t, s)
	require.Equal(t, ids(3), b, "2 holds Shared: only the Exclusive waiter ahead blocks")
	require.Equal(t, ids(3), wf)
}

// TestSourceWideNearest: a wide waiter behind other waiters is answered
// with the nearest conflicting request on each part of its range and the
// conflicting holders that none of those waits for itself; WaitsFor, by
// which the detector confirms a cycle, is every conflict.
func TestSourceWideNearest(t *testing.T) {
	h := newAskHarness(t, false)
	h.lock(1, txnlock.Point([]byte("a")), ex)
	h.lock(6, txnlock.Point([]byte("q")), ex)
	h.lock(8, txnlock.Point([]byte("s")), sh)
	first, _ := h.wait(context.Background(), 2, incl(t, "a", "c"), ex)  // waits for 1
	second, _ := h.wait(context.Background(), 3, incl(t, "b", "d"), ex) // waits for 2
	h.wait(context.Background(), 7, txnlock.Point([]byte("s")), ex)     // waits for 8
	x, _ := h.wait(context.Background(), 4, incl(t, "a", "z"), ex)

	b, wf := ask(t, first)
	require.Equal(t, ids(1), b)
	require.Equal(t, ids(1), wf)
	b, _ = ask(t, second)
	require.Equal(t, ids(2), b, "the wide waiter ahead on [b, c]")
	b, wf = ask(t, x)
	require.Equal(t, ids(1, 3, 6, 7), b, "3 (nearest on [a, d]), 7 (nearest on s, and it waits for 8 itself), and the holders 1 and 6, which no listed request waits for itself")
	require.ElementsMatch(t, ids(1, 2, 3, 6, 7, 8), wf, "every conflict: holders, then requests ahead")
}

// TestSourceUpgrade: an upgrading holder is blocked by the other holders
// (its own transaction may be listed: the detector skips it), and a
// request queued behind the upgrade waits for it.
func TestSourceUpgrade(t *testing.T) {
	h := newAskHarness(t, false)
	k := txnlock.Point([]byte("k"))
	h.lock(1, k, sh)
	h.lock(2, k, sh)
	up, _ := h.wait(context.Background(), 1, k, ex)
	behind, _ := h.wait(context.Background(), 3, k, ex)
	b, wf := ask(t, up)
	require.Contains(t, b, txnlock.TxnID(2))
	require.NotContains(t, b, txnlock.TxnID(3))
	require.Equal(t, ids(2), wf)
	require.Equal(t, 1, h.d.counter.LocksHeld(1))
	b, wf = ask(t, behind)
	require.Equal(t, ids(1, 2), b, "the key's holders")
	require.Equal(t, ids(1), wf, "the upgrade, at the front of the queue")

	// A wide upgrade, and a point upgrade of a key held inside a wide
	// lock.
	h.lock(4, incl(t, "a", "c"), sh)
	h.lock(5, incl(t, "a", "c"), sh)
	h.lock(6, txnlock.Point([]byte("e")), sh)
	h.lock(7, incl(t, "d", "f"), sh)
	wideUp, _ := h.wait(context.Background(), 4, incl(t, "a", "c"), ex)
	pointUp, _ := h.wait(context.Background(), 7, txnlock.Point([]byte("e")), ex)
	b, wf = ask(t, wideUp)
	require.Contains(t, b, txnlock.TxnID(5))
	require.Equal(t, ids(5), wf)
	b, wf = ask(t, pointUp)
	require.Contains(t, b, txnlock.TxnID(6))
	require.Equal(t, ids(6), wf)
}

// TestSourceWaitOver: once a wait is granted or failed, or its manager
// closed, the waiter answers false, though its wait is still reported
// (Unblock has not returned).
func TestSourceWaitOver(t *testing.T) {
	for _, wide := range []bool{false, true} {
		for _, end := range []string{"granted", "cancelled", "closed"} {
			name := end + "/point"
			if wide {
				name = end + "/wide"
			}
			t.Run(name, func(t *testing.T) {
				h := newAskHarness(t, true)
				k := txnlock.Point([]byte("k"))
				h.lock(1, k, ex)
				r := k
				if wide {
					r = incl(t, "a", "z")
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				w, done := h.wait(ctx, 2, r, ex)
				ask(t, w)
				var want error
				switch end {
				case "granted":
					require.NoError(t, h.m.Unlock(1, txnlock.DefaultColumnFamily, k))
				case "cancelled":
					cancel()
					want = context.Canceled
				case "closed":
					require.NoError(t, h.m.Close())
					want = txnlock.ErrClosed
				}
				h.d.awaitUnblock(t, w)
				_, ok := w.Blockers(nil)
				require.False(t, ok, "Blockers after the wait was %s", end)
				_, ok = w.WaitsFor(nil)
				require.False(t, ok, "WaitsFor after the wait was %s", end)
				h.d.open()
				err := <-done
				if want == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, want)
				}
			})
		}
	}
}

// TestSourceRecheck: a waiter that leaves without a grant hands whom it
// waited for to the waiters behind it that named it, and the manager asks
// the detector to search from those (detect.Graph.Recheck): T1 holds
// b; T2 waits for [a, d]; behind it, T3 waits for [b, c] and T4 for d
// (not shared: behind T2), both blocked by T2, and T5 for [x, y] (held
// by T6), which does not overlap. T2 gives up: T3 and T4 are rechecked;
// T3 now waits for T1, and T4 is granted.
func TestSourceRecheck(t *testing.T) {
	h := newAskHarness(t, false)
	h.lock(1, txnlock.Point([]byte("b")), ex)
	ctx, cancel := context.WithCancel(context.Background())
	_, t2 := h.wait(ctx, 2, incl(t, "a", "d"), ex)
	w3, _ := h.wait(context.Background(), 3, incl(t, "b", "c"), ex)
	w4, t4 := h.wait(context.Background(), 4, txnlock.Point([]byte("d")), ex)
	h.lock(6, txnlock.Point([]byte("x")), ex)
	w5, _ := h.wait(context.Background(), 5, incl(t, "x", "y"), ex)
	for _, w := range []detect.Waiter{w3, w4, w5} {
		ask(t, w) // the answers a search keeps
	}
	b, _ := ask(t, w3)
	require.Equal(t, ids(2), b)
	require.Empty(t, h.d.takeRechecked())
	cancel()
	require.ErrorIs(t, <-t2, context.Canceled)
	require.Equal(t, ids(3, 4), h.d.takeRechecked())
	b, _ = ask(t, w3)
	require.Equal(t, ids(1), b)
	require.NoError(t, <-t4)
}
