package lockwait

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/manualclock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newW(txn txnlock.TxnID) *Waiter {
	return New(txn, txnlock.LockRef{Range: txnlock.Point([]byte("k")), Mode: txnlock.Exclusive}, time.Time{})
}

func TestGrantWakesWaiter(t *testing.T) {
	w := newW(1)
	done := make(chan error)
	go func() { done <- w.Wait(context.Background(), txnlock.WaitForever, txnlock.SystemClock{}, nil) }()
	require.True(t, grant(w))
	require.NoError(t, <-done)
	require.False(t, w.Fail(errors.New("late")), "a granted waiter cannot fail")
	require.True(t, w.Granted())
	require.NoError(t, w.Err())
}

func TestTimeoutFiresOnManualClock(t *testing.T) {
	clock := manualclock.New()
	w := newW(1)
	done := make(chan error)
	go func() { done <- w.Wait(context.Background(), time.Second, clock, nil) }()
	clock.WaitPending(1)
	clock.Advance(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before the timeout: %v", err)
	default:
	}
	clock.Advance(time.Millisecond)
	require.ErrorIs(t, <-done, txnlock.ErrLockTimeout)
	require.False(t, grant(w), "a failed waiter cannot be granted")
	require.False(t, w.Active())
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := newW(1)
	done := make(chan error)
	go func() { done <- w.Wait(ctx, txnlock.WaitForever, txnlock.SystemClock{}, nil) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// fakeDet fails every waiter it checks, as a detector that picked the
// requester as the victim would. Block asks for a Check unless noCheck.
type fakeDet struct {
	detect.Graph     // Stamp and Detach: not called
	delay            time.Duration
	noCheck          bool
	blocks, unblocks int
	checks           int
}

func (d *fakeDet) Block(e detect.Edge) bool {
	d.blocks++
	return !d.noCheck
}
func (d *fakeDet) Unblock(w detect.Waiter)    { d.unblocks++ }
func (d *fakeDet) DetectDelay() time.Duration { return d.delay }
func (d *fakeDet) Check(w detect.Waiter) error {
	d.checks++
	return &txnlock.DeadlockError{Victim: w.Txn()}
}

func TestCheckOnBlockAndAfterGrace(t *testing.T) {
	d := &fakeDet{}
	w := newW(4)
	// A timeout, so that a missing Check fails the test instead of hanging it.
	err := w.Wait(context.Background(), time.Minute, txnlock.SystemClock{}, d)
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	require.Equal(t, 1, d.checks)
	require.Equal(t, 1, d.blocks)
	require.Equal(t, 1, d.unblocks, "Wait removes the wait it reported")

	clock := manualclock.New()
	d = &fakeDet{delay: 10 * time.Millisecond}
	w = newW(5)
	done := make(chan error)
	go func() { done <- w.Wait(context.Background(), time.Hour, clock, d) }()
	clock.WaitPending(2)
	require.Zero(t, d.blocks, "a wait younger than the delay is not reported")
	clock.Advance(10 * time.Millisecond)
	require.ErrorIs(t, <-done, txnlock.ErrDeadlock)
	require.Equal(t, 1, d.checks)
	require.Equal(t, 1, d.blocks)
	require.Equal(t, 1, d.unblocks)

	// Granted before the delay: the detector never hears of the wait.
	d = &fakeDet{delay: 10 * time.Millisecond}
	w = newW(8)
	go func() { done <- w.Wait(context.Background(), time.Hour, clock, d) }()
	clock.WaitPending(2)
	grant(w)
	require.NoError(t, <-done)
	require.Zero(t, d.blocks+d.unblocks+d.checks)

	d = &fakeDet{delay: -1}
	w = newW(6)
	go func() { done <- w.Wait(context.Background(), txnlock.WaitForever, clock, d) }()
	grant(w)
	require.NoError(t, <-done)
	require.Equal(t, 0, d.checks, "a negative delay never checks")
	require.Equal(t, 1, d.blocks, "but reports the wait at once")

	// Block said the wait needs no Check: the waiter sleeps unchecked.
	d = &fakeDet{noCheck: true}
	w = newW(7)
	go func() { done <- w.Wait(context.Background(), txnlock.WaitForever, clock, d) }()
	grant(w)
	require.NoError(t, <-done)
	require.Equal(t, 0, d.checks, "a wait Block says needs no Check is not checked")
	require.Equal(t, 1, d.unblocks)
}

// TestGrantFailRace: exactly one of Grant and Fail wins, and Wait reports
// the winner.
func TestGrantFailRace(t *testing.T) {
	for range 2000 {
		w := newW(1)
		var wg sync.WaitGroup
		var granted, failed bool
		wg.Add(2)
		go func() { defer wg.Done(); granted = grant(w) }()
		go func() { defer wg.Done(); failed = w.Fail(txnlock.ErrLockTimeout) }()
		wg.Wait()
		require.NotEqual(t, granted, failed)
		err := w.Wait(context.Background(), txnlock.WaitForever, txnlock.SystemClock{}, nil)
		require.Equal(t, failed, err != nil)
	}
}

func TestQueue(t *testing.T) {
	var q Queue
	a, b, c, u := newW(1), newW(2), newW(3), newW(4)
	q.PushBack(a)
	q.PushBack(b)
	q.PushBack(c)
	q.InsertBefore(u, a)
	order := func() (ids []txnlock.TxnID) {
		for w := q.Front(); w != nil; w = w.Next() {
			ids = append(ids, w.Txn())
		}
		return ids
	}
	require.Equal(t, []txnlock.TxnID{4, 1, 2, 3}, order())
	q.Remove(b)
	q.Remove(b) // no-op
	require.Equal(t, []txnlock.TxnID{4, 1, 3}, order())
	require.Equal(t, 3, q.Len())
	q.Remove(u)
	q.Remove(c)
	require.Equal(t, []txnlock.TxnID{1}, order())
	require.Nil(t, a.Prev())
	q.InsertBefore(b, nil)
	require.Equal(t, []txnlock.TxnID{1, 2}, order())
	require.True(t, b.Queued())
}

// TestReleaseRecycles: a released waiter comes back from New as a fresh
// one (no state, fields or pending signal of its last wait), and a waiter
// still in a queue is never recycled.
func TestReleaseRecycles(t *testing.T) {
	for _, end := range []string{"granted", "failed", "signalled, never waited"} {
		t.Run(end, func(t *testing.T) {
			w := newW(7)
			w.Upgrade, w.Ext, w.Stamp = true, "x", 5
			switch end {
			case "granted":
				require.True(t, grant(w))
				require.NoError(t, w.Wait(context.Background(), txnlock.WaitForever, txnlock.SystemClock{}, nil))
			case "failed":
				require.True(t, w.Fail(txnlock.ErrLockTimeout))
				require.ErrorIs(t, w.Wait(context.Background(), txnlock.WaitForever, txnlock.SystemClock{}, nil), txnlock.ErrLockTimeout)
			default:
				require.True(t, grant(w)) // its token is still in the channel
			}
			w.Release()
			// sync.Pool gives no guarantee to get w back; whatever New
			// returns must be fresh.
			for range 4 {
				v := newW(8)
				require.Equal(t, txnlock.TxnID(8), v.Txn())
				require.True(t, v.Active())
				require.NoError(t, v.Err())
				require.False(t, v.Upgrade)
				require.Nil(t, v.Src)
				require.Zero(t, v.Stamp)
				require.Nil(t, v.Ext)
				require.False(t, v.Queued())
				// No stale signal: a Wait with a short timeout times out.
				require.ErrorIs(t, v.Wait(context.Background(), time.Millisecond, txnlock.SystemClock{}, nil), txnlock.ErrLockTimeout)
				// (v failed: Release it for the next round.)
				v.Release()
			}
		})
	}
	t.Run("queued", func(t *testing.T) {
		var q Queue
		w := newW(9)
		q.PushBack(w)
		w.Release() // a no-op: w is still linked
		require.True(t, w.Queued())
		require.Equal(t, txnlock.TxnID(9), w.Txn())
		require.Same(t, w, q.Front())
	})
}

// Queued (a test helper) reports whether w is linked in a queue.
func (w *Waiter) Queued() bool { return w.queue != nil }

// Granted (a test helper) reports whether Grant succeeded.
func (w *Waiter) Granted() bool { return w.state.Load() == stateGranted }

// TestBackward: the walk back from a waiter yields it and the active
// waiters ahead of it, nearest first, and skips those that ended.
func TestBackward(t *testing.T) {
	var q Queue
	a, b, c, d := newW(1), newW(2), newW(3), newW(4)
	for _, w := range []*Waiter{a, b, c, d} {
		q.PushBack(w)
	}
	require.True(t, b.Fail(txnlock.ErrLockTimeout))
	var got []txnlock.TxnID
	for w := range Backward(c) {
		got = append(got, w.Txn())
	}
	require.Equal(t, []txnlock.TxnID{3, 1}, got)
	for range Backward(d) {
		break // stops when told
	}
}

// grant is a manager's grant with nothing to record: Claim, then Wake.
func grant(w *Waiter) bool {
	if !w.Claim() {
		return false
	}
	w.Wake()
	return true
}

// TestRegranted: a waiter that does not watch its lock's grants always
// says its lock may have been granted since it was queued; one that does
// says so once the count moved.
func TestRegranted(t *testing.T) {
	w := newW(1)
	defer w.Release()
	require.True(t, w.Regranted(), "nothing watched: it may have been")
	var grants atomic.Uint32
	grants.Store(7)
	w.WatchGrants(&grants)
	require.False(t, w.Regranted())
	grants.Add(1)
	require.True(t, w.Regranted())
}
