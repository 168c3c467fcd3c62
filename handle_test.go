package txnlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// signalGraph is a manager's attachment to the real deadlock detector,
// telling the test through a channel which transaction reported a wait:
// the wait is then queued in its manager (Block follows the queueing).
type signalGraph struct {
	detect.Graph
	blocked chan txnlock.TxnID
}

func (g signalGraph) Block(e detect.Edge) bool {
	needs := g.Graph.Block(e)
	g.blocked <- e.Waiter.Txn()
	return needs
}

// stack is three managers sharing one detector: two point managers and a
// range manager, each with column families 0 and 1.
type stack struct {
	blocked    chan txnlock.TxnID // signalGraph's
	p1, p2, rl txnlock.Manager
}

func (s *stack) managers() []txnlock.Manager { return []txnlock.Manager{s.p1, s.p2, s.rl} }

func newStack(t *testing.T) *stack {
	d, err := deadlock.New(deadlock.Options{})
	require.NoError(t, err)
	s := &stack{blocked: make(chan txnlock.TxnID, 16)}
	signal := detect.Wrap(d, func(g detect.Graph) detect.Graph { return signalGraph{g, s.blocked} })
	wo := txnlock.WaitOptions{Detector: signal, LockTimeout: txnlock.WaitForever}
	p1, err := pointlock.New(pointlock.Options{WaitOptions: wo})
	require.NoError(t, err)
	p2, err := pointlock.New(pointlock.Options{WaitOptions: wo})
	require.NoError(t, err)
	rl, err := rangelock.New(rangelock.Options{WaitOptions: wo})
	require.NoError(t, err)
	s.p1, s.p2, s.rl = p1, p2, rl
	for _, m := range s.managers() {
		require.NoError(t, m.AddColumnFamily(1))
	}
	t.Cleanup(func() {
		for _, m := range s.managers() {
			require.NoError(t, m.Close())
		}
		require.NoError(t, d.Close())
	})
	return s
}

// holds reports whether txn holds or waits for anything in any manager.
func (s *stack) holds(txn txnlock.TxnID) bool {
	for _, m := range s.managers() {
		st := m.Status()
		for _, l := range st.Locks {
			for _, h := range l.Holders {
				if h == txn {
					return true
				}
			}
		}
		for _, w := range st.Waits {
			if w.Txn == txn {
				return true
			}
		}
	}
	return false
}

// requireEmpty fails unless no manager has a lock or a waiter.
func (s *stack) requireEmpty(t *testing.T) {
	t.Helper()
	for i, m := range s.managers() {
		st := m.Status()
		require.Empty(t, st.Locks, "manager %d: locks left", i)
		require.Empty(t, st.Waits, "manager %d: waits left", i)
	}
}

func pt(k string) txnlock.Range { return txnlock.Point([]byte(k)) }

func rng(t *testing.T, a, b string) txnlock.Range {
	r, err := txnlock.Inclusive([]byte(a), []byte(b))
	require.NoError(t, err)
	return r
}

// lockEverywhere locks a key or range in each of the three managers and
// both column families.
func lockEverywhere(t *testing.T, s *stack, h *txnlock.Txn, prefix string) {
	ctx := context.Background()
	x := txnlock.Exclusive
	require.NoError(t, h.Lock(ctx, s.p1, txnlock.Request{Range: pt(prefix + "1"), Mode: x}))
	require.NoError(t, h.Lock(ctx, s.p2, txnlock.Request{CF: 1, Range: pt(prefix + "2"), Mode: x}))
	require.NoError(t, h.Lock(ctx, s.rl, txnlock.Request{Range: rng(t, prefix+"3", prefix+"4"), Mode: x}))
	require.NoError(t, h.Lock(ctx, s.rl, txnlock.Request{CF: 1, Range: pt(prefix + "5"), Mode: txnlock.Shared}))
}

// releaseSoon is h.Release, failing the test if it does not return within
// 10s (it waits for the handle's Lock calls, whose waits it must end).
func releaseSoon(t *testing.T, h *txnlock.Txn) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.Release() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Release did not end the handle's lock wait")
		return nil
	}
}

// lockAsync runs h.Lock in a goroutine; the error comes on the channel.
func lockAsync(h *txnlock.Txn, m txnlock.Manager, req txnlock.Request) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Lock(context.Background(), m, req) }()
	return done
}

// A deadlock victim that used three managers and two column families
// releases everything with one Release; a second Release changes nothing.
func TestTxnDeadlockVictimReleasesAll(t *testing.T) {
	for _, twice := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "twice"}[twice], func(t *testing.T) {
			s := newStack(t)
			victim, other := txnlock.NewTxn(1), txnlock.NewTxn(2)
			lockEverywhere(t, s, other, "b")
			lockEverywhere(t, s, victim, "a")
			// other waits for victim's range; victim then closes the cycle
			// and, as the requester, is the detector's victim.
			otherDone := lockAsync(other, s.rl, txnlock.Request{Range: pt("a3"), Mode: txnlock.Exclusive})
			require.Equal(t, txnlock.TxnID(2), <-s.blocked)
			require.Len(t, s.rl.Status().Waits, 1)
			err := victim.Lock(context.Background(), s.p1, txnlock.Request{Range: pt("b1"), Mode: txnlock.Exclusive})
			require.ErrorIs(t, err, txnlock.ErrDeadlock)
			require.True(t, s.holds(1))

			require.NoError(t, victim.Release())
			if twice {
				require.NoError(t, victim.Release())
			}
			require.False(t, s.holds(1), "the victim left locks")
			require.NoError(t, <-otherDone, "the survivor gets the victim's lock")
			require.True(t, s.holds(2))
			require.NoError(t, other.Release())
			s.requireEmpty(t)
		})
	}
}

// Release while one of the handle's Lock calls waits: the wait fails
// with ErrTxnReleased and nothing of the transaction is left.
func TestTxnReleaseWhileWaiting(t *testing.T) {
	s := newStack(t)
	h, other := txnlock.NewTxn(1), txnlock.NewTxn(2)
	lockEverywhere(t, s, other, "b")
	lockEverywhere(t, s, h, "a")
	done := lockAsync(h, s.p2, txnlock.Request{CF: 1, Range: pt("b2"), Mode: txnlock.Shared})
	require.Equal(t, txnlock.TxnID(1), <-s.blocked)
	require.Len(t, s.p2.Status().Waits, 1)

	require.NoError(t, releaseSoon(t, h))
	err := <-done
	require.ErrorIs(t, err, txnlock.ErrTxnReleased)
	var le *txnlock.LockError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "txnlock: lock txn 1 cf 1 [b2] S: transaction released", err.Error())
	require.False(t, s.holds(1))
	require.NoError(t, h.Release())
	require.NoError(t, other.Release())
	s.requireEmpty(t)
}

// grantThenStall grants a request in the real manager, tells the test,
// then returns only once the request's context ends: the grant races
// with the Release that cancelled it.
type grantThenStall struct {
	txnlock.Manager
	granted chan struct{}
}

func (g *grantThenStall) Lock(ctx context.Context, req txnlock.Request) error {
	err := g.Manager.Lock(ctx, req)
	if err == nil {
		close(g.granted)
		<-ctx.Done()
	}
	return err
}

// A manager that grants a request just as Release cancels its wait: the
// call fails with ErrTxnReleased and Release still leaves nothing held,
// also in a manager whose first request it was.
func TestTxnReleaseRacesGrant(t *testing.T) {
	s := newStack(t)
	h := txnlock.NewTxn(1)
	lockEverywhere(t, s, h, "a")
	fresh, err := pointlock.New(pointlock.Options{})
	require.NoError(t, err)
	defer fresh.Close()
	g := &grantThenStall{Manager: fresh, granted: make(chan struct{})}
	done := lockAsync(h, g, txnlock.Request{Range: pt("z"), Mode: txnlock.Exclusive})
	<-g.granted
	require.Len(t, fresh.Status().Locks, 1)
	require.NoError(t, releaseSoon(t, h)) // cancels the context, waits for the call
	require.ErrorIs(t, <-done, txnlock.ErrTxnReleased)
	require.Empty(t, fresh.Status().Locks)
	s.requireEmpty(t)
}

// stallThenGrant tells the test that a request arrived, waits until the
// request's context ends, waits delay more, then grants the request in
// the real manager: a grant that comes after Release began.
type stallThenGrant struct {
	txnlock.Manager
	arrived chan struct{}
	delay   time.Duration
}

func (g *stallThenGrant) Lock(ctx context.Context, req txnlock.Request) error {
	g.arrived <- struct{}{}
	<-ctx.Done()
	time.Sleep(g.delay)
	return g.Manager.Lock(context.Background(), req)
}

// Release while several Lock calls, each through a manager new to the
// handle (wrappers of two real managers, one of them used before), are
// granted one after another after Release began: each call fails with
// ErrTxnReleased, and nothing of the transaction is left held: Release
// waited for the last grant.
func TestTxnReleaseRacesGrants(t *testing.T) {
	p1, err := pointlock.New(pointlock.Options{})
	require.NoError(t, err)
	defer p1.Close()
	p2, err := pointlock.New(pointlock.Options{})
	require.NoError(t, err)
	defer p2.Close()
	h := txnlock.NewTxn(1)
	require.NoError(t, h.Lock(context.Background(), p1, txnlock.Request{Range: pt("held"), Mode: txnlock.Exclusive}))
	const calls = 4
	arrived := make(chan struct{}, calls)
	errs := make(chan error, calls)
	for c := range calls {
		m := &stallThenGrant{Manager: p1, arrived: arrived, delay: time.Duration(c) * 5 * time.Millisecond}
		if c%2 == 1 {
			m.Manager = p2
		}
		go func() {
			errs <- h.Lock(context.Background(), m, txnlock.Request{Range: pt(fmt.Sprint("k", c)), Mode: txnlock.Exclusive})
		}()
	}
	for range calls {
		<-arrived
	}
	require.NoError(t, releaseSoon(t, h))
	for range calls {
		require.ErrorIs(t, <-errs, txnlock.ErrTxnReleased)
	}
	require.Empty(t, p1.Status().Locks)
	require.Empty(t, p2.Status().Locks)
}

// An Unlock that overlaps a waiting upgrade of the same handle moves the
// upgraded point in the record: the upgrade lands on the right point.
func TestTxnLockOverlappingUnlock(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, other := txnlock.NewTxn(1), txnlock.NewTxn(2)
	S, X := txnlock.Shared, txnlock.Exclusive
	require.NoError(t, h.Lock(ctx, s.p1, txnlock.Request{Range: pt("a"), Mode: S}))
	require.NoError(t, h.Lock(ctx, s.p1, txnlock.Request{Range: pt("k"), Mode: S}))
	require.NoError(t, other.Lock(ctx, s.p1, txnlock.Request{Range: pt("k"), Mode: S}))
	done := lockAsync(h, s.p1, txnlock.Request{Range: pt("k"), Mode: X})
	require.Equal(t, txnlock.TxnID(1), <-s.blocked)
	require.NoError(t, h.Unlock(s.p1, 0, pt("a")))
	require.NoError(t, other.Release())
	require.NoError(t, <-done)
	var held []string
	h.Locks(func(m txnlock.Manager, l txnlock.LockRef) bool {
		held = append(held, l.String())
		return true
	})
	require.Equal(t, []string{"cf 0 [k] X"}, held)
	require.NoError(t, h.Release())
	s.requireEmpty(t)
}

// RollbackTo on real managers: what was first taken after the savepoint
// is unlocked, except keys held at the savepoint (which stay, upgraded);
// the savepoint is then stale; Release frees the rest.
func TestTxnSavepointRealManagers(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h := txnlock.NewTxn(1)
	lock := func(m txnlock.Manager, cf txnlock.ColumnFamily, r txnlock.Range, mode txnlock.Mode) {
		t.Helper()
		require.NoError(t, h.Lock(ctx, m, txnlock.Request{CF: cf, Range: r, Mode: mode}))
	}
	S, X := txnlock.Shared, txnlock.Exclusive
	lock(s.p1, 0, pt("a"), S)
	lock(s.rl, 0, rng(t, "a", "f"), S)
	lock(s.p2, 1, pt("x"), X)
	before := h.Requests()
	sp := h.Savepoint()
	lock(s.p1, 0, pt("a"), X)          // upgrade: stays
	lock(s.p1, 0, pt("b"), X)          // new: unlocked
	lock(s.rl, 0, rng(t, "d", "k"), X) // unlocked but for [d, f]
	lock(s.rl, 0, pt("c"), S)          // covered by [a, f] S: not sent
	lock(s.rl, 1, rng(t, "m", "p"), S) // unlocked
	lock(s.p2, 1, pt("x"), S)          // covered: not sent
	lock(s.p2, 1, pt("y"), X)          // unlocked
	require.Equal(t, before+5, h.Requests())

	require.NoError(t, h.RollbackTo(sp))
	require.Equal(t, "locks:\n  cf 0 [a] X holders=[1]\nwaits:\n", s.p1.Status().String())
	require.Equal(t, "locks:\n  cf 1 [x] X holders=[1]\nwaits:\n", s.p2.Status().String())
	require.Equal(t, "locks:\n  cf 0 [a, d) S holders=[1]\n  cf 0 [d, f] X holders=[1]\nwaits:\n", s.rl.Status().String())

	err := h.RollbackTo(sp)
	require.ErrorIs(t, err, txnlock.ErrInvalidSavepoint)
	require.Equal(t, "txnlock: rollback to savepoint txn 1: invalid savepoint", err.Error())

	// A savepoint, then a lock still waiting when Release comes.
	other := txnlock.NewTxn(2)
	lock2 := txnlock.Request{Range: pt("q"), Mode: X}
	require.NoError(t, other.Lock(ctx, s.rl, lock2))
	sp = h.Savepoint()
	lock(s.p1, 1, pt("after"), X)
	done := lockAsync(h, s.rl, lock2)
	require.Equal(t, txnlock.TxnID(1), <-s.blocked)
	require.Len(t, s.rl.Status().Waits, 1)
	require.NoError(t, releaseSoon(t, h))
	require.ErrorIs(t, <-done, txnlock.ErrTxnReleased)
	require.ErrorIs(t, h.RollbackTo(sp), txnlock.ErrTxnReleased)
	require.False(t, s.holds(1))
	require.NoError(t, other.Release())
	s.requireEmpty(t)
}

// Bad input and calls after Release: typed errors, and nothing sent.
func TestTxnErrors(t *testing.T) {
	ctx := context.Background()
	m := newFakeManager()
	h := txnlock.NewTxn(7)
	err := h.Lock(ctx, m, txnlock.Request{Txn: 8, Range: pt("k"), Mode: txnlock.Exclusive})
	require.ErrorIs(t, err, txnlock.ErrInvalidTxn)
	require.Equal(t, "txnlock: lock txn 8 cf 0 [k] X: invalid transaction id: request of txn 8 in the handle of txn 7", err.Error())
	require.Zero(t, m.requests)
	//nolint:staticcheck // a nil context on purpose
	require.ErrorIs(t, h.Lock(nil, m, txnlock.Request{Range: pt("k"), Mode: txnlock.Exclusive}), txnlock.ErrNilContext)
	require.Zero(t, h.Requests())
	// A nil manager is bad input: a typed error, no panic, nothing held.
	require.ErrorIs(t, h.Lock(ctx, nil, txnlock.Request{Range: pt("k"), Mode: txnlock.Exclusive}), txnlock.ErrNilManager)
	require.ErrorIs(t, h.Unlock(nil, 0, pt("k")), txnlock.ErrNilManager)
	require.False(t, h.Holds(nil, 0, pt("k"), txnlock.Shared))
	require.Zero(t, h.Requests())

	// A held lock answers only valid requests: the others reach the
	// manager, which rejects them (here a real one).
	p, err := pointlock.New(pointlock.Options{})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, h.Lock(ctx, p, txnlock.Request{Range: pt("k"), Mode: txnlock.Exclusive}))
	require.ErrorIs(t, h.Lock(ctx, p, txnlock.Request{Range: pt("k"), Mode: 0}), txnlock.ErrInvalidMode)
	require.ErrorIs(t, h.Lock(ctx, p, txnlock.Request{Range: pt("k"), Mode: txnlock.Shared, Timeout: -5}), txnlock.ErrInvalidTimeout)
	require.ErrorIs(t, h.Unlock(p, 0, pt("nope")), txnlock.ErrNotHeld)

	require.ErrorIs(t, h.RollbackTo(txnlock.Savepoint{}), txnlock.ErrInvalidSavepoint)
	require.ErrorIs(t, h.RollbackTo(txnlock.NewTxn(7).Savepoint()), txnlock.ErrInvalidSavepoint)

	sp := h.Savepoint()
	require.NoError(t, h.Release())
	require.Empty(t, p.Status().Locks)
	err = h.Lock(ctx, p, txnlock.Request{Range: pt("k"), Mode: txnlock.Exclusive})
	require.Equal(t, "txnlock: lock txn 7 cf 0 [k] X: transaction released", err.Error())
	err = h.Unlock(p, 0, pt("k"))
	require.Equal(t, "txnlock: unlock txn 7 cf 0 [k]: transaction released", err.Error())
	err = h.RollbackTo(sp)
	require.Equal(t, "txnlock: rollback to savepoint txn 7: transaction released", err.Error())
	require.False(t, h.Holds(p, 0, pt("k"), txnlock.Shared))
	require.True(t, errors.Is(h.Release(), nil), "a second Release returns nil")
}

// Direct Manager calls bypass the record: Release still ends the
// transaction in the managers the handle used, not in the others.
func TestTxnMixedWithDirectCalls(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h := txnlock.NewTxn(1)
	require.NoError(t, h.Lock(ctx, s.p1, txnlock.Request{Range: pt("a"), Mode: txnlock.Exclusive}))
	require.NoError(t, s.p1.Lock(ctx, txnlock.Request{Txn: 1, Range: pt("direct"), Mode: txnlock.Exclusive}))
	require.NoError(t, s.p2.Lock(ctx, txnlock.Request{Txn: 1, Range: pt("elsewhere"), Mode: txnlock.Exclusive}))
	require.NoError(t, s.p2.Lock(ctx, txnlock.Request{Txn: 2, Range: pt("theirs"), Mode: txnlock.Exclusive}))
	require.NoError(t, h.Release())
	require.Empty(t, s.p1.Status().Locks, "UnlockAll in a manager the handle used frees direct locks too")
	require.Equal(t, "locks:\n  cf 0 [elsewhere] X holders=[1]\n  cf 0 [theirs]    X holders=[2]\nwaits:\n", s.p2.Status().String())
	require.NoError(t, s.p2.UnlockAll(1))
	require.NoError(t, s.p2.UnlockAll(2))
}
