package rangelock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"go.uber.org/goleak"
)

// TestKeptBlockers drives random requests (that wait), releases and
// cancellations of six transactions on one goroutine and, after each
// step, checks the invariants, among them that every waiter's kept
// answer to the detector is the one a fresh walk gives (checkKeptLocked):
// the check before kept every answer, so a change that should have
// dropped one shows.
func TestKeptBlockers(t *testing.T) {
	defer goleak.VerifyNone(t)
	seqs := 60
	if *long {
		seqs = 3000
	}
	for seed := range seqs {
		if err := runKept(seed, 150); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// keptWait is a Lock call of runKept that has not returned.
type keptWait struct {
	done   chan error
	cancel context.CancelFunc
}

func runKept(seed, steps int) error {
	o := &opReader{rng: rand.New(rand.NewPCG(uint64(seed), 11))}
	m, err := New(Options{Stripes: 1 << o.next(3), fixedHash: true})
	if err != nil {
		return err
	}
	defer m.Close()
	queued := make(chan txnlock.TxnID, 1)
	m.queued = func(txn txnlock.TxnID) { queued <- txn }
	waits := map[txnlock.TxnID]*keptWait{}
	defer func() {
		for _, w := range waits {
			w.cancel()
			<-w.done
		}
	}()
	var trace strings.Builder
	for range steps {
		txn := txnlock.TxnID(1 + o.next(6))
		w := waits[txn]
		switch op := o.next(10); {
		case w != nil && op < 4:
			fmt.Fprintf(&trace, "cancel %s\n", txn)
			w.cancel()
			<-w.done
			delete(waits, txn)
		case w == nil && op < 8:
			r, mode := o.rangeOf(), txnlock.Mode(1+o.next(2))
			fmt.Fprintf(&trace, "lock %s %v %v\n", txn, r, mode)
			ctx, cancel := context.WithCancel(context.Background())
			w = &keptWait{done: make(chan error, 1), cancel: cancel}
			go func() { w.done <- m.Lock(ctx, txnlock.Request{Txn: txn, Range: r, Mode: mode, Timeout: time.Hour}) }()
			// It returns at once, or it queues (the queued hook).
			select {
			case err := <-w.done:
				w.done <- err // for the collection below
			case <-queued:
			}
			waits[txn] = w
		default:
			fmt.Fprintf(&trace, "unlock-all %s\n", txn)
			if err := m.UnlockAll(txn); err != nil {
				return err
			}
		}
		for txn, w := range waits {
			select {
			case <-w.done:
				w.cancel()
				delete(waits, txn)
			default:
			}
		}
		if err := m.checkInvariants(); err != nil {
			return fmt.Errorf("%s%w", trace.String(), err)
		}
	}
	return nil
}

// TestKeptBlockersUpgradeAhead: an upgrade joins its key's queue at the
// front, ahead of the point waiters there, whose answers change: T1, T4
// and T5 hold b Shared; T2 waits for [a, c] Exclusive, and T3's
// Exclusive request for b queues behind it (not shared); T2 gives up, and
// T3 is blocked by the holders T1, T4 and T5. T1 asks for b Exclusive and
// queues ahead of T3, which now reaches T4 and T5 through T1.
func TestKeptBlockersUpgradeAhead(t *testing.T) {
	withRangeManager(t, func(m *Manager, _ *deadlock.Detector) {
		ctx := context.Background()
		for _, txn := range []txnlock.TxnID{1, 4, 5} {
			require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: txn, Range: point("b"), Mode: txnlock.Shared}))
		}
		ctx2, cancel2 := context.WithCancel(ctx)
		t2 := make(chan error, 1)
		go func() {
			t2 <- m.Lock(ctx2, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "c"), Mode: txnlock.Exclusive})
		}()
		waitUntilWaiting(t, 2)
		t3 := asyncLock(m, txnlock.Request{Txn: 3, Range: point("b"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 3)
		cancel2()
		require.ErrorIs(t, <-t2, context.Canceled)
		require.NoError(t, m.checkInvariants()) // keeps T3's answer: 1, 4, 5
		t1 := asyncLock(m, txnlock.Request{Txn: 1, Range: point("b"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 1)
		require.NoError(t, m.checkInvariants())
		require.NoError(t, m.UnlockAll(4))
		require.NoError(t, m.UnlockAll(5))
		require.NoError(t, <-t1)
		require.NoError(t, m.checkInvariants())
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t3)
		require.NoError(t, m.UnlockAll(3))
	})
}

// TestKeptBlockersFailedAhead: a waiter ahead that failed stops counting
// before its goroutine unlinks it, and a kept answer made of it with it.
// T1 holds b; T2 waits for [a, c] and T3 for [b, d], behind T2; T2 fails
// (as a victim would), and T3's answer is T1 at once.
func TestKeptBlockersFailedAhead(t *testing.T) {
	withRangeManager(t, func(m *Manager, _ *deadlock.Detector) {
		ctx := context.Background()
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("b"), Mode: txnlock.Exclusive}))
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "c"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 2)
		t3 := asyncLock(m, txnlock.Request{Txn: 3, Range: mustRange(t, "b", "d"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 3)
		require.NoError(t, m.checkInvariants()) // keeps T3's answer: T2
		f := m.sh.Fams.Get(0)
		f.lockStripes()
		var t2w *waiter
		f.forEachWaiterLocked(func(w *waiter) {
			if w.txn == 2 {
				t2w = w
			}
		})
		require.True(t, t2w.lw.Fail(txnlock.ErrDeadlock))
		err := f.checkKeptLocked()
		f.unlockStripes()
		require.NoError(t, err)
		require.ErrorIs(t, <-t2, txnlock.ErrDeadlock)
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t3)
		require.NoError(t, m.UnlockAll(3))
	})
}

// TestKeptBlockersIdleAheadGainsALock: whether a request passes one
// queued ahead of it is settled when they queue. T1 holds k; T2, holding
// nothing, waits for [a, m]; T3, which holds z, waits for [j, l], for T1
// alone: it passes T2's request. T2 then takes y with a second Lock
// call, and T3 still passes T2's request, in the kept answer and in a
// fresh one.
func TestKeptBlockersIdleAheadGainsALock(t *testing.T) {
	withRangeManager(t, func(m *Manager, _ *deadlock.Detector) {
		ctx := context.Background()
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: point("k"), Mode: txnlock.Exclusive}))
		t2 := asyncLock(m, txnlock.Request{Txn: 2, Range: mustRange(t, "a", "m"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 2)
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 3, Range: point("z"), Mode: txnlock.Exclusive}))
		t3 := asyncLock(m, txnlock.Request{Txn: 3, Range: mustRange(t, "j", "l"), Mode: txnlock.Exclusive})
		waitUntilWaiting(t, 3)
		require.Equal(t, []txnlock.TxnID{1}, blockersOf(m.Status(), 3), "T3 passes T2's request")
		require.NoError(t, m.checkInvariants()) // keeps T3's answer: T1
		require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 2, Range: point("y"), Mode: txnlock.Exclusive}))
		require.Equal(t, []txnlock.TxnID{1}, blockersOf(m.Status(), 3), "T2's request queued idle")
		require.NoError(t, m.checkInvariants())
		require.NoError(t, m.UnlockAll(1))
		require.NoError(t, <-t2)
		require.NoError(t, m.UnlockAll(2))
		require.NoError(t, <-t3)
		require.NoError(t, m.UnlockAll(3))
	})
}

// blockersOf is the Blockers of txn's wait in st, or nil.
func blockersOf(st txnlock.Status, txn txnlock.TxnID) []txnlock.TxnID {
	for _, w := range st.Waits {
		if w.Txn == txn {
			return w.Blockers
		}
	}
	return nil
}
