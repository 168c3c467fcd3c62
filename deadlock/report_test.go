package deadlock

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// A deadlock report says exactly who waits for whom: each step of the
// cycle is a wait and whom it waits for directly (its holders, or the
// requests queued ahead that stand between), and each transaction's locks
// are counted in every manager that shares the detector. These tests
// build each cycle with real managers and compare the whole report.

// reportRig is a point manager and a range manager sharing a detector.
type reportRig struct {
	t      *testing.T
	det    *Detector
	points *pointlock.Manager
	ranges *rangelock.Manager
	asleep <-chan *lockwait.Waiter // parkings
	errs   []<-chan error
}

func newReportRig(t *testing.T) *reportRig {
	det, err := New(Options{})
	require.NoError(t, err)
	pm, rm := sharingManagers(t, det)
	r := &reportRig{t: t, det: det, points: pm, ranges: rm, asleep: parkings(t)}
	t.Cleanup(func() {
		require.NoError(t, pm.Close())
		require.NoError(t, rm.Close())
		for _, ch := range r.errs {
			<-ch // failed by Close if still waiting
		}
		require.NoError(t, det.Close())
	})
	return r
}

// inEachManager runs fn on a new rig, once with its point manager and
// once with its range manager.
func inEachManager(t *testing.T, fn func(t *testing.T, r *reportRig, m txnlock.Manager)) {
	t.Run("point", func(t *testing.T) {
		r := newReportRig(t)
		fn(t, r, r.points)
	})
	t.Run("range", func(t *testing.T) {
		r := newReportRig(t)
		fn(t, r, r.ranges)
	})
}

// lock takes a lock that is granted at once.
func (r *reportRig) lock(m txnlock.Manager, txn txnlock.TxnID, rg txnlock.Range, mode txnlock.Mode) {
	r.t.Helper()
	require.NoError(r.t, m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: rg, Mode: mode}))
}

// wait starts a request that waits, and returns once it sleeps, its wait
// reported to the detector.
func (r *reportRig) wait(m txnlock.Manager, txn txnlock.TxnID, rg txnlock.Range, mode txnlock.Mode) {
	ch := make(chan error, 1)
	go func() { ch <- m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: rg, Mode: mode}) }()
	r.errs = append(r.errs, ch)
	<-r.asleep
}

// closeCycle makes the request that closes the cycle and returns its
// deadlock, rendered one step per line.
func (r *reportRig) closeCycle(m txnlock.Manager, txn txnlock.TxnID, rg txnlock.Range, mode txnlock.Mode) string {
	r.t.Helper()
	err := m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: rg, Mode: mode})
	var de *txnlock.DeadlockError
	require.ErrorAs(r.t, err, &de)
	require.Equal(r.t, txn, de.Victim, "the requester is the victim")
	var sb strings.Builder
	for _, c := range de.Cycle {
		fmt.Fprintf(&sb, "%d waits for %v %v, blocked by %v, holding %d\n",
			c.Txn, c.Lock.Range, c.Lock.Mode, c.Blockers, c.LocksHeld)
	}
	return sb.String()
}

func TestReportTwoCycle(t *testing.T) {
	r := newReportRig(t)
	r.lock(r.points, 1, pt("a"), txnlock.Exclusive)
	r.lock(r.points, 2, pt("b"), txnlock.Exclusive)
	r.wait(r.points, 1, pt("b"), txnlock.Exclusive)
	require.Equal(t, ""+
		"2 waits for [a] X, blocked by [txn 1], holding 1\n"+
		"1 waits for [b] X, blocked by [txn 2], holding 1\n",
		r.closeCycle(r.points, 2, pt("a"), txnlock.Exclusive))
}

func TestReportThreeCycle(t *testing.T) {
	r := newReportRig(t)
	for txn, k := range []string{"", "a", "b", "c"} {
		if k != "" {
			r.lock(r.points, txnlock.TxnID(txn), pt(k), txnlock.Exclusive)
		}
	}
	r.lock(r.points, 3, pt("d"), txnlock.Shared)
	r.wait(r.points, 1, pt("b"), txnlock.Exclusive)
	r.wait(r.points, 2, pt("c"), txnlock.Exclusive)
	require.Equal(t, ""+
		"3 waits for [a] S, blocked by [txn 1], holding 2\n"+
		"1 waits for [b] X, blocked by [txn 2], holding 1\n"+
		"2 waits for [c] X, blocked by [txn 3], holding 1\n",
		r.closeCycle(r.points, 3, pt("a"), txnlock.Shared))
}

// TestReportThroughQueue: T1 holds a Shared; T2 queues Exclusive on a
// (for T1); T3 queues Shared on a behind T2 — compatible with T1, it
// waits for T2's request, not for T1. T1's request for c, which T3 holds,
// closes T1 → T3 → T2 → T1, and the report says so, as Status does.
func TestReportThroughQueue(t *testing.T) {
	inEachManager(t, func(t *testing.T, r *reportRig, m txnlock.Manager) {
		r.lock(m, 1, pt("a"), txnlock.Shared)
		r.lock(m, 3, pt("c"), txnlock.Exclusive)
		r.wait(m, 2, pt("a"), txnlock.Exclusive)
		r.wait(m, 3, pt("a"), txnlock.Shared)
		for _, w := range m.Status().Waits {
			if w.Txn == 3 {
				require.Equal(t, []txnlock.TxnID{2}, w.Blockers)
			}
		}
		require.Equal(t, ""+
			"1 waits for [c] X, blocked by [txn 3], holding 1\n"+
			"3 waits for [a] S, blocked by [txn 2], holding 1\n"+
			"2 waits for [a] X, blocked by [txn 1], holding 0\n",
			r.closeCycle(m, 1, pt("c"), txnlock.Exclusive))
	})
}

// TestReportUpgrade: two Shared holders both ask for Exclusive.
func TestReportUpgrade(t *testing.T) {
	inEachManager(t, func(t *testing.T, r *reportRig, m txnlock.Manager) {
		r.lock(m, 1, pt("k"), txnlock.Shared)
		r.lock(m, 2, pt("k"), txnlock.Shared)
		r.wait(m, 1, pt("k"), txnlock.Exclusive)
		require.Equal(t, ""+
			"2 waits for [k] X, blocked by [txn 1], holding 1\n"+
			"1 waits for [k] X, blocked by [txn 2], holding 1\n",
			r.closeCycle(m, 2, pt("k"), txnlock.Exclusive))
	})
}

// TestReportPointAndRange: T1 holds row x in the point manager and waits
// for k in the range manager, inside T2's [a, z]; T2 then asks for x.
// Each holds its lock in the manager it does not wait in.
func TestReportPointAndRange(t *testing.T) {
	r := newReportRig(t)
	az, err := txnlock.Inclusive([]byte("a"), []byte("z"))
	require.NoError(t, err)
	r.lock(r.points, 1, pt("x"), txnlock.Exclusive)
	r.lock(r.ranges, 2, az, txnlock.Exclusive)
	r.lock(r.ranges, 2, pt("zz"), txnlock.Shared)
	r.wait(r.ranges, 1, pt("k"), txnlock.Shared)
	require.Equal(t, ""+
		"2 waits for [x] X, blocked by [txn 1], holding 2\n"+
		"1 waits for [k] S, blocked by [txn 2], holding 1\n",
		r.closeCycle(r.points, 2, pt("x"), txnlock.Exclusive))
}

func pt(k string) txnlock.Range { return txnlock.Point([]byte(k)) }
