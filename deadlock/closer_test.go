package deadlock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/pointlock"
)

// lateReports holds back the report (Block) of one transaction's wait
// until the closing transaction's own report, and its search if it runs
// one, are done: a descheduled goroutine, made certain.
type lateReports struct {
	late, closer txnlock.TxnID
	release      chan struct{}
	once         sync.Once
}

// wrap returns det with its attachments passed through d.
func (d *lateReports) wrap(det *Detector) txnlock.Detector {
	return detect.Wrap(det, func(g detect.Graph) detect.Graph { return lateGraph{g, d} })
}

// lateGraph is a manager's attachment through lateReports.
type lateGraph struct {
	detect.Graph
	d *lateReports
}

func (g lateGraph) Block(e detect.Edge) bool {
	d := g.d
	if e.Waiter.Txn() == d.late {
		<-d.release
	}
	needsCheck := g.Graph.Block(e)
	if e.Waiter.Txn() == d.closer && !needsCheck {
		d.once.Do(func() { close(d.release) })
	}
	return needsCheck
}

func (g lateGraph) Check(w detect.Waiter) error {
	d := g.d
	err := g.Graph.Check(w)
	if w.Txn() == d.closer {
		d.once.Do(func() { close(d.release) })
	}
	return err
}

// threeCycle runs T1 → T2 → T3 → T1 on a point manager: T1, T2 and T3
// hold a, b and c; T1 asks for b and T2 for c, and once both are queued
// (Status shows them) T3 asks for a and closes the cycle. It returns the
// error of each request.
func threeCycle(t *testing.T, det txnlock.Detector) map[txnlock.TxnID]error {
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}})
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	ctx := context.Background()
	for txn, key := range map[txnlock.TxnID]string{1: "a", 2: "b", 3: "c"} {
		require.NoError(t, m.Lock(ctx, lockReq(txn, 0, key, txnlock.Exclusive)))
	}
	var mu sync.Mutex
	errs := map[txnlock.TxnID]error{}
	var wg sync.WaitGroup
	lock := func(txn txnlock.TxnID, key string) {
		wg.Go(func() {
			err := m.Lock(ctx, lockReq(txn, 0, key, txnlock.Exclusive))
			mu.Lock()
			errs[txn] = err
			mu.Unlock()
			if err != nil {
				require.NoError(t, m.UnlockAll(txn)) // roll back: the others go on
			}
		})
	}
	waiting := func(n int) {
		for len(m.Status().Waits) < n {
			runtime.Gosched()
		}
	}
	lock(1, "b")
	waiting(1)
	lock(2, "c")
	waiting(2)
	lock(3, "a")
	// The survivors finish once the victim rolled back; then they end.
	for {
		mu.Lock()
		victims := 0
		for _, err := range errs {
			if err != nil {
				victims++
			}
		}
		mu.Unlock()
		if victims > 0 {
			break
		}
		runtime.Gosched()
	}
	for txn := range txnlock.TxnID(3) {
		require.NoError(t, m.UnlockAll(txn+1))
	}
	wg.Wait()
	return errs
}

// TestRequesterIsTheCloser: under the requester policy the victim of a
// cycle is the transaction whose Lock call closed it (the wait queued
// last, by its stamp), even when an earlier waiter's report reaches the
// detector after the closing request's own search found nothing.
func TestRequesterIsTheCloser(t *testing.T) {
	check := func(t *testing.T, errs map[txnlock.TxnID]error) {
		require.ErrorIs(t, errs[3], txnlock.ErrDeadlock, "T3 closed the cycle: %v", errs)
		var de *txnlock.DeadlockError
		require.True(t, errors.As(errs[3], &de))
		require.Equal(t, txnlock.TxnID(3), de.Victim)
		require.NoError(t, errs[1])
		require.NoError(t, errs[2])
	}
	t.Run("late report", func(t *testing.T) {
		for range 20 {
			det, err := New(Options{})
			require.NoError(t, err)
			late := &lateReports{late: 1, closer: 3, release: make(chan struct{})}
			check(t, threeCycle(t, late.wrap(det)))
			require.NoError(t, det.Close())
		}
	})
	t.Run("repeated", func(t *testing.T) {
		n := 300
		if *long {
			n = 2000
		}
		for range n {
			det, err := New(Options{})
			require.NoError(t, err)
			check(t, threeCycle(t, det))
			require.NoError(t, det.Close())
		}
	})
}
