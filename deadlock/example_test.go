package deadlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
)

// Two transactions lock two rows in opposite orders. The detector, shared
// by the manager, finds the cycle when the second one would wait: that
// requester is the victim and rolls back, and the other gets its lock.
func Example() {
	det, err := deadlock.New(deadlock.Options{})
	if err != nil {
		panic(err)
	}
	defer det.Close()
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	a, b := txnlock.Point([]byte("a")), txnlock.Point([]byte("b"))
	m.Lock(ctx, txnlock.Request{Txn: 1, Range: a, Mode: txnlock.Exclusive})
	m.Lock(ctx, txnlock.Request{Txn: 2, Range: b, Mode: txnlock.Exclusive})

	granted := make(chan error)
	go func() { granted <- m.Lock(ctx, txnlock.Request{Txn: 1, Range: b, Mode: txnlock.Exclusive}) }()
	for i := 0; i < 1000 && len(m.Status().Waits) == 0; i++ {
		time.Sleep(time.Millisecond) // until txn 1 waits for b, a second at most
	}
	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: a, Mode: txnlock.Exclusive})
	var d *txnlock.DeadlockError
	if errors.As(err, &d) {
		fmt.Println("txn 2 deadlocked:", errors.Is(err, txnlock.ErrDeadlock), "victim:", d.Victim)
		for _, e := range d.Cycle {
			fmt.Printf("  txn %d waits for %v, blocked by %v\n", e.Txn, e.Lock, e.Blockers)
		}
	}
	m.UnlockAll(2) // the victim rolls back
	fmt.Println("txn 1:", <-granted)
	fmt.Println(len(det.History()), "deadlock in the history")
	m.UnlockAll(1)
	// Output:
	// txn 2 deadlocked: true victim: txn 2
	//   txn 2 waits for cf 0 [a] X, blocked by [txn 1]
	//   txn 1 waits for cf 0 [b] X, blocked by [txn 2]
	// txn 1: <nil>
	// 1 deadlock in the history
}

// OnDeadlock sees every deadlock, after the victim was failed and outside
// the detector's mutex: the place to log them.
func ExampleOptions_onDeadlock() {
	reports := make(chan string, 1)
	det, err := deadlock.New(deadlock.Options{
		Victim: deadlock.VictimRequester,
		OnDeadlock: func(d *txnlock.DeadlockError) {
			reports <- fmt.Sprint("victim ", d.Victim, ", cycle of ", len(d.Cycle))
		},
	})
	if err != nil {
		panic(err)
	}
	defer det.Close()
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	k := txnlock.Point([]byte("k"))
	// Two readers that both upgrade: each waits for the other's shared lock.
	m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Shared})
	m.Lock(ctx, txnlock.Request{Txn: 2, Range: k, Mode: txnlock.Shared})
	upgraded := make(chan error)
	go func() { upgraded <- m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive}) }()
	for i := 0; i < 1000 && len(m.Status().Waits) == 0; i++ {
		time.Sleep(time.Millisecond) // until txn 1 waits, a second at most
	}
	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: k, Mode: txnlock.Exclusive})
	fmt.Println(errors.Is(err, txnlock.ErrDeadlock), <-reports)
	m.UnlockAll(2)
	fmt.Println("txn 1 upgraded:", <-upgraded)
	m.UnlockAll(1)
	fmt.Println(det.Stats().Deadlocks, "deadlock")
	// Output:
	// true victim txn 2, cycle of 2
	// txn 1 upgraded: <nil>
	// 1 deadlock
}
