package txnlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
)

// The life of a lock request: granted at once when nothing conflicts;
// otherwise it waits, here until its timeout; once the holder releases,
// the same request is granted.
func Example() {
	m, err := pointlock.New(pointlock.Options{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	ctx := context.Background()
	key := txnlock.Point([]byte("account/7"))

	err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: key, Mode: txnlock.Exclusive})
	fmt.Println("txn 1:", err)

	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: key, Mode: txnlock.Shared, Timeout: 10 * time.Millisecond})
	fmt.Println("txn 2 timed out:", errors.Is(err, txnlock.ErrLockTimeout))

	m.UnlockAll(1) // txn 1 commits
	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: key, Mode: txnlock.Shared})
	fmt.Println("txn 2:", err)
	fmt.Print(m.Status())
	m.UnlockAll(2)
	// Output:
	// txn 1: <nil>
	// txn 2 timed out: true
	// txn 2: <nil>
	// locks:
	//   cf 0 [account/7] S holders=[2]
	// waits:
}

// Ranges say which ends they include: Closed is [start, end], HalfOpen
// [start, end), Prefix every key that starts with p, Point one key.
func ExampleRange() {
	closed, _ := txnlock.Inclusive([]byte("b"), []byte("d"))
	halfOpen, _ := txnlock.HalfOpen([]byte("b"), []byte("d"))
	prefix := txnlock.Prefix([]byte("user/"))
	for _, r := range []txnlock.Range{closed, halfOpen, prefix, txnlock.Point([]byte("k")), txnlock.All()} {
		fmt.Printf("%-16v contains d: %-5t contains user/42: %t\n", r, r.Contains([]byte("d")), r.Contains([]byte("user/42")))
	}
	fmt.Println(closed.Overlaps(halfOpen), closed.Covers(halfOpen), halfOpen.Covers(closed))
	// Output:
	// [b, d]           contains d: true  contains user/42: false
	// [b, d)           contains d: false contains user/42: false
	// [user/, user0)   contains d: false contains user/42: true
	// [k]              contains d: false contains user/42: false
	// (-inf, +inf)     contains d: true  contains user/42: true
	// true true false
}

// NewRange builds a range between two positions in the key order: just
// after "m" (so "m" is out) and +∞.
func ExampleNewRange() {
	r, err := txnlock.NewRange(txnlock.BoundAfter([]byte("m")), txnlock.PosInf())
	fmt.Println(r, err)
	fmt.Println(r.Contains([]byte("m")), r.Contains([]byte("m0")), r.Contains([]byte("zzz")))
	_, err = txnlock.Inclusive([]byte("z"), []byte("a"))
	fmt.Println(errors.Is(err, txnlock.ErrInvalidRange))
	// Output:
	// (m, +inf) <nil>
	// false true true
	// true
}
