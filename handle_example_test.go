package txnlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// A transaction locks a row in a point manager and an index range in a
// range manager through its handle, rolls back to a savepoint, and ends
// with one Release in both.
func ExampleTxn() {
	rows, _ := pointlock.New(pointlock.Options{})
	defer rows.Close()
	index, _ := rangelock.New(rangelock.Options{})
	defer index.Close()
	ctx := context.Background()

	h := txnlock.NewTxn(7)
	row := txnlock.Point([]byte("orders/17"))
	scan, _ := txnlock.HalfOpen([]byte("by-date/2024"), []byte("by-date/2025")) // [by-date/2024, by-date/2025)
	fmt.Println(h.Lock(ctx, rows, txnlock.Request{Range: row, Mode: txnlock.Exclusive}))
	fmt.Println(h.Lock(ctx, index, txnlock.Request{Range: scan, Mode: txnlock.Shared}))

	sp := h.Savepoint()
	fmt.Println(h.Lock(ctx, rows, txnlock.Request{Range: txnlock.Point([]byte("orders/18")), Mode: txnlock.Exclusive}))
	fmt.Println(h.Lock(ctx, rows, txnlock.Request{Range: row, Mode: txnlock.Shared})) // held: not sent
	fmt.Println("requests sent:", h.Requests())
	fmt.Println(h.RollbackTo(sp)) // unlocks orders/18
	fmt.Print(rows.Status())

	fmt.Println(h.Release())
	fmt.Println(len(rows.Status().Locks), len(index.Status().Locks))
	err := h.Lock(ctx, rows, txnlock.Request{Range: row, Mode: txnlock.Shared})
	fmt.Println(errors.Is(err, txnlock.ErrTxnReleased))
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// <nil>
	// requests sent: 3
	// <nil>
	// locks:
	//   cf 0 [orders/17] X holders=[7]
	// waits:
	// <nil>
	// 0 0
	// true
}
