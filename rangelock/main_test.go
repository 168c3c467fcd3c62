package rangelock

import (
	"sync"
	"testing"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	restore := lockwait.SetTestingParked(parked.note)
	defer restore()
	goleak.VerifyTestMain(m)
}

// parked counts, per transaction, the waiters whose goroutines sleep in
// Wait: with a detector that reports at once (DetectDelay 0, the
// default), a waiter sleeps only once its wait is reported and checked.
// Tests wait on it instead of polling Status on a clock.
var parked = parkedWaiters{n: map[txnlock.TxnID]int{}}

type parkedWaiters struct {
	mu   sync.Mutex // guards n
	cond *sync.Cond
	n    map[txnlock.TxnID]int
}

func (p *parkedWaiters) note(w *lockwait.Waiter, sleeps bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sleeps {
		p.n[w.Txn()]++
	} else {
		p.n[w.Txn()]--
	}
	p.cond.Broadcast()
}

func init() { parked.cond = sync.NewCond(&parked.mu) }

// waitUntilWaiting returns once a request of txn sleeps in its wait:
// queued, and (with a detector) reported and checked.
func waitUntilWaiting(t *testing.T, txn txnlock.TxnID) {
	t.Helper()
	parked.mu.Lock()
	defer parked.mu.Unlock()
	for parked.n[txn] == 0 {
		parked.cond.Wait()
	}
}
