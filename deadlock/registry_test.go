package deadlock

import (
	"unsafe"

	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// sameSlot returns a transaction other than txn that hashes to txn's
// registry slot.
func sameSlot(txn txnlock.TxnID) txnlock.TxnID {
	for o := txn + 1; ; o++ {
		if slotIndex(o) == slotIndex(txn) {
			return o
		}
	}
}

// regWaits returns the registered waits of txn, active or not.
func regWaits(r *registry, txn txnlock.TxnID) []wait {
	s := r.slot(txn)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wait
	for i := range s.lenLocked() {
		if w := s.atLocked(i); w.txn == txn {
			out = append(out, *w)
		}
	}
	return out
}

// TestRegistry: add, remove and waiting, with two transactions that share
// a slot, so that each answer is seen to be about its own transaction.
func TestRegistry(t *testing.T) {
	var r registry
	a := txnlock.TxnID(1)
	b := sameSlot(a)
	wa1, wa2, wb := newTestWaiter(a), newTestWaiter(a), newTestWaiter(b)
	r.add(wa1, a, 1)
	r.add(wa2, a, 2)
	r.add(wb, b, 3)
	require.Equal(t, 3, r.count())
	require.True(t, r.waiting(a))
	require.True(t, r.waiting(b))
	require.False(t, r.waiting(a+1), "nobody else waits")

	// A second report of the same waiter replaces the first.
	r.add(wb, b, 7)
	require.Equal(t, 3, r.count())
	got := regWaits(&r, b)
	require.Len(t, got, 1)
	require.Equal(t, uint64(7), got[0].seq)

	// A wait that ended does not count, and the probe that finds it
	// forgets it, with every other ended wait of the slot.
	wa3 := newTestWaiter(a)
	r.add(wa3, a, 9)
	wa3.end()
	wb.end()
	require.False(t, r.waiting(b))
	require.Empty(t, regWaits(&r, b))
	require.Len(t, regWaits(&r, a), 2, "wa3 is forgotten too")
	require.Equal(t, 2, r.count())

	// Removing one of a's waits: a has another, active one.
	require.True(t, r.remove(wa1))
	// The Unblock of a wait a probe forgot still finds its transaction's
	// other wait; an ended other wait does not count; nor do b's waits in
	// the slot.
	wb2 := newTestWaiter(b)
	r.add(wb2, b, 8)
	require.True(t, r.remove(wb), "wb2 is b's other wait")
	wa2.end()
	require.False(t, r.remove(wa2), "b's active wait in the same slot is not a's")
	require.False(t, r.remove(wa2), "removed already")
	require.Equal(t, 1, r.count())
	require.False(t, r.waiting(a))
	require.True(t, r.waiting(b))
}

// TestRegistryLister: each lists the active waits with their stamps, and
// with finds a wait by its transaction and stamp while it is recorded,
// as a detector built on this one (detect.Lister) reads them.
func TestRegistryLister(t *testing.T) {
	var r registry
	a := txnlock.TxnID(1)
	b := sameSlot(a)
	wa, wb, wc := newTestWaiter(a), newTestWaiter(b), newTestWaiter(a+1)
	r.add(wa, a, 1)
	r.add(wb, b, 2)
	r.add(wc, a+1, 3)
	list := func() map[txnlock.TxnID]uint64 {
		got := map[txnlock.TxnID]uint64{}
		r.each(func(txn txnlock.TxnID, seq uint64) { got[txn] = seq })
		return got
	}
	require.Equal(t, map[txnlock.TxnID]uint64{a: 1, b: 2, a + 1: 3}, list())
	var asked detect.Waiter
	require.True(t, r.with(b, 2, func(w detect.Waiter) { asked = w }))
	require.Same(t, wb, asked)
	require.False(t, r.with(b, 1, func(detect.Waiter) { t.Fatal("another wait's stamp") }))
	require.False(t, r.with(a, 2, func(detect.Waiter) { t.Fatal("another transaction's wait") }))
	wb.end()
	require.Equal(t, map[txnlock.TxnID]uint64{a: 1, a + 1: 3}, list(), "an ended wait is not listed")
	r.remove(wc)
	require.False(t, r.with(a+1, 3, func(detect.Waiter) { t.Fatal("removed") }))
	require.Equal(t, map[txnlock.TxnID]uint64{a: 1}, list())
}

// TestRemoveFromEmptySlot: the Unblock of a wait that a probe forgot,
// alone in its slot, reads the slot's count and takes no mutex: here the
// slot's mutex is held throughout.
func TestRemoveFromEmptySlot(t *testing.T) {
	var r registry
	w, h := newTestWaiter(1), newTestWaiter(2)
	r.add(h, 2, 1)
	r.add(w, 1, 2)
	w.end()
	require.True(t, r.waiting(2))
	require.False(t, r.waiting(1), "w ended: forgotten")
	s := r.slot(1)
	require.True(t, s.mu.TryLock())
	done := make(chan bool)
	go func() { done <- r.remove(w) }()
	select {
	case others := <-done:
		require.False(t, others)
	case <-time.After(10 * time.Second):
		t.Fatal("the Unblock of a forgotten wait waits for its slot's mutex")
	}
	s.mu.Unlock()
	require.Equal(t, 1, r.count())
}

// TestBlockNeedsCheck: Block registers the wait, asks the waiter once whom
// its lock is blocked by now, and asks for a Check only if one of those
// other than the waiter's own transaction has an active wait.
func TestBlockNeedsCheck(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	w1 := newTestWaiter(1, 2)
	require.False(t, d.block(w1.edge()), "txn 2 does not wait")
	w2 := newTestWaiter(2, 1)
	require.True(t, d.block(w2.edge()), "txn 1 waits")
	// An upgrader is among the blockers of its own lock: it does not
	// count, although it now waits.
	w3 := newTestWaiter(3, 3, 9)
	require.False(t, d.block(w3.edge()))
	// A blocker whose wait ended (granted, not yet Unblocked) does not
	// count, and the probe forgets the wait.
	w1.end()
	w4 := newTestWaiter(4, 1)
	require.False(t, d.block(w4.edge()))
	require.Empty(t, regWaits(d.reg, 1))
	// What the waiter answers now counts.
	w5 := newTestWaiter(5, 9)
	require.False(t, d.block(w5.edge()))
	require.True(t, d.block(newTestWaiter(6, 9, 2).edge()))
	for _, w := range []*testWaiter{w1, w2, w3, w4, w5} {
		require.Equal(t, int64(1), w.asked.Load(), "Block asks txn %v's waiter once", w.txn)
	}
	require.Equal(t, 5, d.Stats().Waits)
	require.Zero(t, d.Stats().Searches, "Block searches nothing")

	// A wait that ended before its report is not registered.
	late := newTestWaiter(7, 2)
	late.end()
	require.False(t, d.block(late.edge()))
	require.Equal(t, 5, d.Stats().Waits)
	// Every Block takes a stamp unless the manager took one: the newer
	// wait has the larger.
	require.Less(t, regWaits(d.reg, 2)[0].seq, regWaits(d.reg, 3)[0].seq)
	e := w5.edge()
	e.Stamp = 1000
	d.block(e)
	require.Equal(t, uint64(1000), regWaits(d.reg, 5)[0].seq, "a second Block replaces the first")
	require.Equal(t, 5, d.Stats().Waits)

	// A lock that changed hands since its waiter was queued: Block asks
	// whom it is blocked by now, so a waiter queued behind txn 9 and
	// reported once the lock went to txn 1, which waits, needs a Check.
	delayed, err := newDetector(Options{DetectDelay: time.Millisecond, Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer delayed.Close()
	dw1 := newTestWaiter(1, 9)
	require.False(t, delayed.block(dw1.edge()))
	dw2 := newTestWaiter(2, 9)
	dw2.setBlockers(1)
	require.True(t, delayed.block(dw2.edge()), "k went to txn 1, which waits")
	require.Equal(t, int64(1), dw2.asked.Load())

	// A waiter whose lock was not granted since it was queued is not
	// asked: Block takes whom it was queued behind, from the edge.
	nw1 := newTestWaiter(1, 9)
	nw1.queued = []txnlock.TxnID{9}
	require.False(t, delayed.block(nw1.edge()))
	nw2 := newTestWaiter(3, 9)
	nw2.queued = []txnlock.TxnID{1}
	require.True(t, delayed.block(nw2.edge()), "queued behind txn 1, which waits")
	require.Zero(t, nw1.asked.Load()+nw2.asked.Load(), "Block asked a waiter whose lock was not granted since")

	off, err := newDetector(Options{Detection: Off}, false)
	require.NoError(t, err)
	defer off.Close()
	require.False(t, off.block(newTestWaiter(1, 2).edge()))
	require.False(t, off.block(newTestWaiter(2, 1).edge()), "Off registers nothing")
	require.Zero(t, off.Stats().Waits)
}

// viewEdges reads the waits of ws as a search's live view does, and
// returns their edges, in order.
func viewEdges(t *testing.T, d *Detector, ws ...*testWaiter) []*edge {
	t.Helper()
	g := &d.mu.c.g
	g.reset()
	var out []*edge
	for _, w := range ws {
		n := g.node(w.txn)
		i := slices.IndexFunc(n.waits, func(e *edge) bool { return e.waiter == w })
		require.GreaterOrEqual(t, i, 0, "txn %v's wait is not in the view", w.txn)
		out = append(out, n.waits[i])
	}
	return out
}

func edgeTxns(es []*edge) []txnlock.TxnID {
	var out []txnlock.TxnID
	for _, e := range es {
		out = append(out, e.txn)
	}
	return out
}

// TestConfirm: confirm re-reads a cycle found in a view by the exact
// rule (Waiter.WaitsFor), through the waits of intermediate transactions.
//
// Lock k is held Shared by txn 1. Txn 2 is queued on k for Exclusive and
// txn 3 for Shared behind it: 3 waits for 2 (queued ahead), 2 for the
// holder 1, and k's blockers are [1] for both. Txn 1 waits for lock m,
// held by 3. The view has the contracted cycle 1 -> 3 -> 1; the real one
// is 1 -> 3 -> 2 -> 1.
func TestConfirm(t *testing.T) {
	setup := func(t *testing.T) (d *Detector, w1, w2, w3 *testWaiter, cycle []*edge) {
		d, err := newDetector(Options{Clock: manualclock.New()}, false)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		w2 = newTestWaiter(2, 1)
		w3 = newTestWaiter(3, 1)
		w3.setWaitsFor(2)
		w1 = newTestWaiter(1, 3)
		for _, w := range []*testWaiter{w2, w3, w1} {
			d.block(w.edge())
		}
		return d, w1, w2, w3, viewEdges(t, d, w1, w3)
	}
	t.Run("through an active intermediate", func(t *testing.T) {
		d, _, _, _, cycle := setup(t)
		got, _ := d.mu.c.confirm(cycle)
		require.Equal(t, []txnlock.TxnID{1, 3, 2}, edgeTxns(got))
		require.Equal(t, []txnlock.TxnID{3}, got[0].blockers)
		require.Equal(t, []txnlock.TxnID{2}, got[1].blockers, "each wait with whom it waits for directly")
		require.Equal(t, []txnlock.TxnID{1}, got[2].blockers)
	})
	t.Run("the intermediate's wait ended", func(t *testing.T) {
		d, _, w2, _, cycle := setup(t)
		w2.end() // timed out: 3 waits for 2's goroutine to leave the queue, not for 1
		require.Nil(t, first(d.mu.c.confirm(cycle)))
	})
	t.Run("a member's wait ended", func(t *testing.T) {
		d, _, _, w3, cycle := setup(t)
		w3.end()
		require.Nil(t, first(d.mu.c.confirm(cycle)))
	})
	t.Run("an exact edge is gone", func(t *testing.T) {
		d, w1, _, _, cycle := setup(t)
		w1.setWaitsFor() // m changed hands: 1 waits for nobody now, for a moment
		require.Nil(t, first(d.mu.c.confirm(cycle)))
	})
	t.Run("the wait was reported again", func(t *testing.T) {
		// Another wait of the same waiter (a new stamp) is not the wait
		// the view read.
		d, _, _, w3, cycle := setup(t)
		e := w3.edge()
		e.Stamp = 1000
		d.block(e)
		require.Nil(t, first(d.mu.c.confirm(cycle)))
	})
	t.Run("paths that cross", func(t *testing.T) {
		// The view says 1 -> 2 -> 1; directly, 1 and 2 each wait for 3,
		// and 3 for both. Joined end to end, the paths 1 -> 3 -> 2 and
		// 2 -> 3 -> 1 pass 3 twice: cut there, the cycle is 3 -> 2 -> 3
		// (real, as is 3 -> 1 -> 3).
		d, err := newDetector(Options{Clock: manualclock.New()}, false)
		require.NoError(t, err)
		defer d.Close()
		w1, w2, w3 := newTestWaiter(1, 2), newTestWaiter(2, 1), newTestWaiter(3, 9)
		w1.setWaitsFor(3)
		w2.setWaitsFor(3)
		w3.setWaitsFor(1, 2)
		for _, w := range []*testWaiter{w1, w2, w3} {
			d.block(w.edge())
		}
		got, _ := d.mu.c.confirm(viewEdges(t, d, w1, w2))
		require.Equal(t, []txnlock.TxnID{3, 2}, edgeTxns(got))
		require.Contains(t, got[0].blockers, txnlock.TxnID(2))
		require.Contains(t, got[1].blockers, txnlock.TxnID(3))
	})
}

// TestCheckReportsConfirmedCycle: the cycle Check reports is the confirmed
// one, intermediates and all, each member with whom it waits for directly;
// a cycle that does not confirm is counted, not reported, and wants a
// background pass.
func TestCheckReportsConfirmedCycle(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	w2 := newTestWaiter(2, 1)
	w3 := newTestWaiter(3, 1)
	w3.setWaitsFor(2)
	w1 := newTestWaiter(1, 3)
	d.block(w2.edge())
	d.block(w3.edge())
	require.True(t, d.block(w1.edge()))
	err = d.check(w1, w1.Txn())
	de := asDeadlock(t, err)
	require.Equal(t, txnlock.TxnID(1), de.Victim, "the requester's wait is the newest")
	var txns []txnlock.TxnID
	var holders [][]txnlock.TxnID
	for _, c := range de.Cycle {
		txns = append(txns, c.Txn)
		holders = append(holders, c.Blockers)
	}
	require.Equal(t, []txnlock.TxnID{1, 3, 2}, txns)
	require.Equal(t, [][]txnlock.TxnID{{3}, {2}, {1}}, holders)
	require.Equal(t, err, w1.Err(), "the requester's waiter is failed too")

	// The same, but txn 2 has timed out: no deadlock.
	d2, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d2.Close()
	w2 = newTestWaiter(2, 1)
	w3 = newTestWaiter(3, 1)
	w3.setWaitsFor(2)
	w1 = newTestWaiter(1, 3)
	d2.block(w2.edge())
	d2.block(w3.edge())
	d2.block(w1.edge())
	w2.end()
	require.NoError(t, d2.check(w1, w1.Txn()))
	st := d2.Stats()
	require.Zero(t, st.Deadlocks)
	require.Equal(t, uint64(1), st.FalsePositivesAvoided)
	require.True(t, d2.takePassWish(), "an unconfirmed cycle wants a background pass")
	require.True(t, w1.Active())
}

// TestUnblockSearchesOtherWait: a transaction that waits in two places
// and is granted one becomes a holder that others may wait for; its
// Unblock of the granted wait searches from the other one, also when a
// probe forgot the granted wait first, or when it was granted before its
// Block and never recorded. Txn 1 waits for a (held by 9) and for b (held
// by 2); txn 2 waits for a too. Then 9 releases a and it goes to txn 1:
// 1 -> 2 -> 1 closes without a new wait.
func TestUnblockSearchesOtherWait(t *testing.T) {
	for _, granted := range []string{"recorded", "forgotten", "unrecorded"} {
		t.Run(granted, func(t *testing.T) {
			d, err := newDetector(Options{Clock: manualclock.New()}, false)
			require.NoError(t, err)
			defer d.Close()
			w1a, w1b := newTestWaiter(1, 9), newTestWaiter(1, 2)
			w2 := newTestWaiter(2, 9)
			if granted == "unrecorded" {
				w1a.end() // granted before its Block
			}
			for _, w := range []*testWaiter{w1a, w1b, w2} {
				require.False(t, d.block(w.edge()))
			}
			w1a.end() // granted
			w2.setBlockers(1)
			if granted == "forgotten" {
				// The probe of a Block behind txn 1.
				require.True(t, d.reg.waiting(1), "w1b waits")
			}
			if granted != "recorded" {
				require.Len(t, regWaits(d.reg, 1), 1, "only w1b is recorded")
			}
			d.unblock(w1a)
			st := d.Stats()
			// The victim is the newest wait, txn 2's: not the searching
			// one, so the search runs again from w1b, and finds nothing
			// more.
			require.Equal(t, uint64(2), st.Searches)
			require.Equal(t, uint64(1), st.Deadlocks)
			require.ErrorIs(t, w2.Err(), txnlock.ErrDeadlock)
			require.True(t, w1b.Active())

			// The victim's goroutine Unblocks its wait: txn 2 has no
			// other, so there is nothing to search.
			d.unblock(w2)
			require.Equal(t, uint64(2), d.Stats().Searches)
			// Nor when the other wait has ended too.
			w1c := newTestWaiter(1, 5)
			d.block(w1c.edge())
			w1b.end()
			d.unblock(w1c)
			require.Equal(t, uint64(2), d.Stats().Searches)
			d.unblock(w1b)
			require.Zero(t, d.Stats().Waits)
		})
	}
}

// first returns the first of two values.
func first[A, B any](a A, _ B) A { return a }

// TestPassReadsWithoutMutex: a pass learns that it is wanted and reads the
// registry without the detector's mutex, on which a busy graph's searches
// queue; it takes the mutex only to break what it found.
func TestPassReadsWithoutMutex(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	defer d.Close()
	d.block(newTestWaiter(1, 2).edge())
	d.apply(decision{deferred: true}) // a deferred search wants a pass
	read := make(chan struct{})
	d.testingAfterSnapshot = func() { close(read) }
	d.mu.Lock() // a search holds the mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		if d.takePassWish() {
			d.backgroundPass()
		}
	}()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass waits for the detector's mutex before it reads the registry")
	}
	d.mu.Unlock()
	<-done
	require.EqualValues(t, 1, d.Stats().BackgroundPasses)
	require.False(t, d.takePassWish(), "the pass took the wish")
}

// TestSlotIsOneCacheLine: a report touches one cache line, and the slots
// of neighbouring transactions share none (64-bit platforms).
func TestSlotIsOneCacheLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit platforms only")
	}
	require.Equal(t, uintptr(64), unsafe.Sizeof(regSlot{}))
}
