package bench_test

import (
	"context"
	"fmt"

	"github.com/txnlock/txnlock/bench"
)

// A plan compares lock kinds on sysbench's oltp_write_only: each kind runs
// on a fresh sbtest table, in mirrored order (point range range point),
// and each cell averages its runs. Here every run stops after 200
// transactions on one thread; a real comparison sets Time and Threads.
func Example() {
	opts := bench.Options{
		Locks:        []bench.LockKind{bench.LockPoint, bench.LockRange},
		Threads:      []int{1},
		Events:       200,
		TableOptions: bench.TableOptions{TableSize: 1000},
	}
	res, err := bench.RunPlan(context.Background(), bench.OpenSBTest, opts, nil, nil)
	if err != nil {
		panic(err)
	}
	for _, r := range res.Runs {
		fmt.Printf("run %d: %s, %d transactions, %d lock requests\n", r.Seq, r.Lock, r.Txns, r.LockRequests)
	}
	for _, c := range res.Cells {
		fmt.Printf("%s at %d thread: %d runs, %.2f lock requests per transaction, table checked: %t\n",
			c.Lock, c.Threads, c.Runs, c.LocksPerTxn, c.VerifyOK)
	}
	// res.WriteComparison(os.Stdout) prints QPS per thread count and each
	// kind's ratio to the first, with its interval.

	// Output:
	// run 1: point, 200 transactions, 598 lock requests
	// run 2: range, 200 transactions, 1398 lock requests
	// run 3: range, 200 transactions, 1398 lock requests
	// run 4: point, 200 transactions, 598 lock requests
	// point at 1 thread: 2 runs, 2.99 lock requests per transaction, table checked: true
	// range at 1 thread: 2 runs, 6.99 lock requests per transaction, table checked: true
}
