package deadlock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/manualclock"
)

func TestDormantSlotSize(t *testing.T) {
	require.Zero(t, unsafe.Sizeof(dormantSlot{})%64, "a slot is whole cache lines")
}

// TestParkedWaitSkipsDetectorMutex: the wait of a transaction that blocks
// nothing is parked, counted in Stats, and its Block and Unblock never
// take the detector's mutex (the test holds it meanwhile).
func TestParkedWaitSkipsDetectorMutex(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	r := d.NewResource()
	d.SetBlockers(r, []txnlock.TxnID{2})
	w := newChanWaiter(1)

	d.mu.Lock()
	done := make(chan bool)
	go func() { done <- d.Block(txnlock.WaitEdge{Waiter: w, Resource: r}) }()
	select {
	case needsCheck := <-done:
		require.False(t, needsCheck)
	case <-time.After(5 * time.Second):
		t.Fatal("Block of a wait nobody can reach took the detector's mutex")
	}
	require.Empty(t, d.mu.c.g.txns, "the parked wait is in the graph")
	d.mu.Unlock()
	require.Equal(t, 1, d.Stats().Waits)

	d.mu.Lock()
	go func() { d.Unblock(w); done <- true }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Unblock of a parked wait took the detector's mutex")
	}
	d.mu.Unlock()
	require.Zero(t, d.Stats().Waits)
}

// TestParkedWaitPromoted: when a transaction with a parked wait becomes a
// blocker, its wait moves into the graph, where a later Block's search
// finds the cycle through it; its Unblock then takes the graph's path.
func TestParkedWaitPromoted(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	a, b := d.NewResource(), d.NewResource()
	w1, w2 := newChanWaiter(1), newChanWaiter(2)
	d.SetBlockers(a, []txnlock.TxnID{2})
	require.False(t, d.Block(txnlock.WaitEdge{Waiter: w1, Resource: a}))
	require.Empty(t, d.mu.c.g.txns)

	d.SetBlockers(b, []txnlock.TxnID{1}) // txn 1 now holds b
	require.NotNil(t, d.mu.c.g.find(w1), "txn 1 blocks b: its wait belongs in the graph")
	require.Empty(t, d.dorm.parked())

	require.True(t, d.Block(txnlock.WaitEdge{Waiter: w2, Resource: b}))
	var de *txnlock.DeadlockError
	require.ErrorAs(t, d.Check(w2), &de)
	require.Len(t, de.Cycle, 2)
	require.Equal(t, txnlock.TxnID(2), de.Victim)

	d.Unblock(w1)
	require.Empty(t, d.mu.c.g.txns)
	require.Zero(t, d.Stats().Waits)
}

// TestDormantModel runs random Block, Unblock, grant, SetBlockers and
// DropResource sequences and checks after each one that no parked wait's
// transaction blocks a resource, that every slot's count matches the
// graph, and that every live wait is recorded exactly once.
func TestDormantModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			d, err := newDetector(Options{Clock: manualclock.New()}, false)
			require.NoError(t, err)
			const nTxn, nRes = 8, 5
			res := make([]txnlock.ResourceID, nRes)
			for i := range res {
				res[i] = d.NewResource()
			}
			var live []*fakeWaiter // blocked and not yet unblocked
			for op := range 2000 {
				switch k := rng.IntN(10); {
				case k < 3:
					w := &fakeWaiter{txn: txnlock.TxnID(1 + rng.IntN(nTxn))}
					w.name = fmt.Sprintf("op%d", op)
					d.Block(txnlock.WaitEdge{Waiter: w, Resource: res[rng.IntN(nRes)]})
					live = append(live, w)
				case k < 5 && len(live) > 0:
					i := rng.IntN(len(live))
					d.Unblock(live[i])
					live = slices.Delete(live, i, i+1)
				case k < 6 && len(live) > 0:
					live[rng.IntN(len(live))].granted = true
				case k < 9:
					var b []txnlock.TxnID
					for range rng.IntN(4) {
						b = append(b, txnlock.TxnID(1+rng.IntN(nTxn)))
					}
					d.SetBlockers(res[rng.IntN(nRes)], b)
				default:
					d.DropResource(res[rng.IntN(nRes)])
				}
				checkDormant(t, d, live)
			}
		})
	}
}

// checkDormant checks the dormant table against the live graph.
func checkDormant(t *testing.T, d *Detector, live []*fakeWaiter) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	g := &d.mu.c.g
	blocks := map[txnlock.TxnID]bool{}
	var count [dormantSlots]int32
	for _, r := range g.res {
		for _, b := range r.blockers {
			blocks[b] = true
			count[slotIndex(b)]++
		}
	}
	for i := range d.dorm.slots {
		if count[i] != d.dorm.slots[i].blocking.Load() {
			t.Fatalf("slot %d counts %d blockers, the graph has %d", i, d.dorm.slots[i].blocking.Load(), count[i])
		}
	}
	parked := map[txnlock.Waiter]bool{}
	for _, e := range d.dorm.parked() {
		if e.Waiter.(*fakeWaiter).Active() {
			require.False(t, blocks[e.Waiter.Txn()], "txn %d's live wait is parked but it blocks a resource", e.Waiter.Txn())
		}
		require.Nil(t, g.find(e.Waiter), "a wait both parked and in the graph")
		parked[e.Waiter] = true
	}
	for _, w := range live {
		if w.Active() {
			require.True(t, parked[w] || g.find(w) != nil, "live wait of %s lost", w.name)
		}
		require.False(t, parked[w] && g.find(w) != nil, "wait of %s both parked and in the graph", w.name)
	}
}

// TestDormantConcurrent races parks and unparks against SetBlockers that
// make the waiting transactions blockers and not, and checks the table's
// invariant from a third goroutine while they run (-race covers the rest).
func TestDormantConcurrent(t *testing.T) {
	d, err := New(Options{})
	require.NoError(t, err)
	defer d.Close()
	const waiters, rounds = 8, 2000
	target, held := d.NewResource(), d.NewResource()
	d.SetBlockers(target, []txnlock.TxnID{100})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			for range rounds {
				w := newChanWaiter(txnlock.TxnID(i + 1))
				d.Block(txnlock.WaitEdge{Waiter: w, Resource: target})
				d.Unblock(w)
			}
		})
	}
	var side sync.WaitGroup
	side.Go(func() { // the blockers of held flip among the waiters
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				d.SetBlockers(held, nil)
				return
			default:
			}
			d.SetBlockers(held, []txnlock.TxnID{txnlock.TxnID(1 + rng.IntN(waiters))})
		}
	})
	side.Go(func() { // per slot, under d.mu: no parked wait of a blocker
		for {
			select {
			case <-stop:
				return
			default:
			}
			d.mu.Lock()
			blocks := map[txnlock.TxnID]bool{}
			for _, r := range d.mu.c.g.res {
				for _, b := range r.blockers {
					blocks[b] = true
				}
			}
			for i := range d.dorm.slots {
				s := &d.dorm.slots[i]
				s.mu.Lock()
				for _, p := range s.waits {
					if blocks[p.txn] {
						t.Errorf("txn %d parked while it blocks", p.txn)
					}
				}
				s.mu.Unlock()
			}
			d.mu.Unlock()
		}
	})
	wg.Wait()
	close(stop)
	side.Wait()
	require.Zero(t, d.Stats().Waits)
	d.mu.Lock()
	require.Empty(t, d.mu.c.g.txns)
	d.mu.Unlock()
}

// TestBlockNilWaiter: a wait edge without a waiter is bad input; Block
// records nothing and asks for no Check, and nothing panics.
func TestBlockNilWaiter(t *testing.T) {
	d, err := newDetector(Options{Clock: manualclock.New()}, false)
	require.NoError(t, err)
	r := d.NewResource()
	d.SetBlockers(r, []txnlock.TxnID{2})
	require.NotPanics(t, func() { require.False(t, d.Block(txnlock.WaitEdge{Resource: r})) })
	require.Zero(t, d.Stats().Waits)
}

// parked returns a copy of the parked waits (a test helper).
func (t *dormant) parked() []txnlock.WaitEdge {
	var out []txnlock.WaitEdge
	for i := range t.slots {
		s := &t.slots[i]
		s.mu.Lock()
		for _, p := range s.waits {
			out = append(out, p.e)
		}
		s.mu.Unlock()
	}
	return out
}
