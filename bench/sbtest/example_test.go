package sbtest_test

import (
	"context"
	"fmt"

	"github.com/txnlock/txnlock/bench/sbtest"
)

// sysbench's sbtest table on Pebble in memory, locked by the range
// manager: prepare it, run one oltp_write_only-like transaction, count
// its lock requests, and check the table.
func Example() {
	db, err := sbtest.Open(sbtest.Options{TableSize: 100, Lock: sbtest.LockRange})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Prepare(ctx); err != nil {
		panic(err)
	}
	tx := db.Begin()
	row, found, err := tx.PointSelect(ctx, 1, 7)
	fmt.Println("id 7 found:", found, err, "id:", row.ID)
	n, err := tx.UpdateIndex(ctx, 1, 7) // UPDATE sbtest1 SET k=k+1 WHERE id=7
	fmt.Println("updated:", n, err)
	n, err = tx.Delete(ctx, 1, 8)
	fmt.Println("deleted:", n, err)
	fmt.Println(tx.Insert(ctx, 1, sbtest.Row{ID: 8, K: 8, C: "c", Pad: "pad"}))
	fmt.Println("lock requests:", tx.LockRequests())
	fmt.Println(tx.Commit())
	report, err := db.Verify()
	fmt.Println(report.OK(), err)
	// Output:
	// id 7 found: true <nil> id: 7
	// updated: 1 <nil>
	// deleted: 1 <nil>
	// <nil>
	// lock requests: 6
	// <nil>
	// true <nil>
}
