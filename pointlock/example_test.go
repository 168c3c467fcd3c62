package pointlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
)

// Two readers share a key; a writer waits for both, and its wait shows in
// Status with who blocks it.
func Example() {
	m, err := pointlock.New(pointlock.Options{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	row := txnlock.Point([]byte("orders/17"))
	for txn := txnlock.TxnID(1); txn <= 2; txn++ {
		if err := m.Lock(ctx, txnlock.Request{Txn: txn, Range: row, Mode: txnlock.Shared}); err != nil {
			panic(err)
		}
	}
	granted := make(chan error)
	go func() {
		granted <- m.Lock(ctx, txnlock.Request{Txn: 3, Range: row, Mode: txnlock.Exclusive})
	}()
	for i := 0; i < 1000 && len(m.Status().Waits) == 0; i++ {
		time.Sleep(time.Millisecond) // until txn 3 waits, a second at most
	}
	fmt.Print(m.Status())
	m.UnlockAll(1)
	m.UnlockAll(2)
	fmt.Println("txn 3:", <-granted)
	fmt.Print(m.Status())
	m.UnlockAll(3)
	// Output:
	// locks:
	//   cf 0 [orders/17] S holders=[1 2]
	// waits:
	//   txn 3 cf 0 [orders/17] X blockers=[1 2]
	// txn 3: <nil>
	// locks:
	//   cf 0 [orders/17] X holders=[3]
	// waits:
}

// MaxLocks bounds the distinct keys locked: a new key beyond it is
// refused at once, a key already locked is not.
func ExampleOptions_maxLocks() {
	m, err := pointlock.New(pointlock.Options{MaxLocks: 2})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "a"} {
		err := m.Lock(ctx, txnlock.Request{Txn: 1, Range: txnlock.Point([]byte(k)), Mode: txnlock.Exclusive})
		fmt.Printf("%s: lock limit %t\n", k, errors.Is(err, txnlock.ErrLockLimit))
	}
	fmt.Println(m.Stats().CurrentLocks, "locks held")
	m.UnlockAll(1)
	// Output:
	// a: lock limit false
	// b: lock limit false
	// c: lock limit true
	// a: lock limit false
	// 2 locks held
}

// Column families are separate key spaces: the same key in two of them
// is two locks.
func ExampleManager_AddColumnFamily() {
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.NoWait}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	const index = txnlock.ColumnFamily(1)
	if err := m.AddColumnFamily(index); err != nil {
		panic(err)
	}
	ctx := context.Background()
	k := txnlock.Point([]byte("42"))
	fmt.Println(m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive}))
	fmt.Println(m.Lock(ctx, txnlock.Request{Txn: 2, CF: index, Range: k, Mode: txnlock.Exclusive}))
	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: k, Mode: txnlock.Exclusive})
	fmt.Println(errors.Is(err, txnlock.ErrLockNoWait))
	m.UnlockAll(1)
	m.UnlockAll(2)
	// Output:
	// <nil>
	// <nil>
	// true
}
