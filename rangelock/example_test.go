package rangelock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/rangelock"
)

// A range lock covers the keys that do not exist yet: an insert into the
// locked range conflicts, one outside it does not.
func Example() {
	m, err := rangelock.New(rangelock.Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.NoWait}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	scan, _ := txnlock.Inclusive([]byte("id/10"), []byte("id/20"))
	fmt.Println(m.Lock(ctx, txnlock.Request{Txn: 1, Range: scan, Mode: txnlock.Exclusive}))
	for _, k := range []string{"id/15", "id/25"} {
		err := m.Lock(ctx, txnlock.Request{Txn: 2, Range: txnlock.Point([]byte(k)), Mode: txnlock.Exclusive})
		fmt.Printf("insert %s: conflicts %t\n", k, errors.Is(err, txnlock.ErrLockNoWait))
	}
	fmt.Print(m.Status())
	m.UnlockAll(1)
	m.UnlockAll(2)
	// Output:
	// <nil>
	// insert id/15: conflicts true
	// insert id/25: conflicts false
	// locks:
	//   cf 0 [id/10, id/20] X holders=[1]
	//   cf 0 [id/25]        X holders=[2]
	// waits:
}

// Shared ranges may overlap with different ends; an exclusive request
// over any part of them waits.
func Example_sharedRanges() {
	m, err := rangelock.New(rangelock.Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.NoWait}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	a, _ := txnlock.Inclusive([]byte("a"), []byte("m"))
	b, _ := txnlock.HalfOpen([]byte("f"), []byte("z"))
	fmt.Println(m.Lock(ctx, txnlock.Request{Txn: 1, Range: a, Mode: txnlock.Shared}))
	fmt.Println(m.Lock(ctx, txnlock.Request{Txn: 2, Range: b, Mode: txnlock.Shared}))
	err = m.Lock(ctx, txnlock.Request{Txn: 3, Range: txnlock.Point([]byte("g")), Mode: txnlock.Exclusive})
	fmt.Println("exclusive g conflicts:", errors.Is(err, txnlock.ErrLockNoWait))
	m.UnlockAll(1)
	m.UnlockAll(2)
	// Output:
	// <nil>
	// <nil>
	// exclusive g conflicts: true
}

// Under a memory budget, a transaction's adjacent exclusive ranges are
// escalated into one range that covers them, gaps included, instead of
// failing.
func ExampleOptions_maxLockMemory() {
	m, err := rangelock.New(rangelock.Options{MaxLockMemory: 4 << 10, Stripes: 4})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	for i := range 200 {
		k := txnlock.Point([]byte(fmt.Sprintf("row/%04d", 2*i)))
		if err := m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive}); err != nil {
			panic(err)
		}
	}
	s := m.Stats()
	fmt.Println("escalated:", s.Escalations > 0, "within budget:", s.LockMemory <= 4<<10)
	first := m.Status().Locks[0]
	fmt.Println("the first lock covers row/0000:", first.Range.Contains([]byte("row/0000")),
		"and row/0001, never asked for:", first.Range.Contains([]byte("row/0001")))
	m.UnlockAll(1)
	// Output:
	// escalated: true within budget: true
	// the first lock covers row/0000: true and row/0001, never asked for: true
}
