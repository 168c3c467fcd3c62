// Package bench is lockbench's engine: sysbench's OLTP workloads and a
// mysqlslap analog run against sysbench's sbtest table (bench/sbtest, on
// Pebble) to compare txnlock's lock managers, with reports people can
// read: sysbench's per-run report, the point-vs-range comparison table
// with each ratio's interval, CSV and JSON.
//
//	opts := bench.Options{Threads: []int{1, 8, 64}, Time: 5 * time.Second, Pairs: 2} // zero fields: the defaults
//	res, err := bench.RunPlan(ctx, bench.OpenSBTest, opts, nil, nil)
//	if err != nil { ... }
//	res.WriteComparison(os.Stdout) // QPS per thread count, range/point with its interval
//	res.WriteCSV(f)                // or WriteJSON: every cell, every run
//
// # The life of a run
//
//	RunPlan(opts)                      for each thread count:
//	  │                                  in mirrored order: point range range point,
//	  │                                  then range point point range, ...
//	  ▼
//	Run(spec) ── Opener ──▶ fresh table (OpenSBTest: sbtest on Pebble, with one
//	  │                      deadlock detector shared by its managers, prepared)
//	  ▼
//	N threads, each a client session running the workload's transactions:
//	  BEGIN ─ statements ─ COMMIT     each statement: the throttling delay, then
//	  │                               the Tx call, which locks through the manager
//	  ├─ ok: latency histogram, lock requests, digest statistics
//	  ├─ deadlock victim, lock not granted: rolled back, an ignored error
//	  └─ anything else: the run stops (ErrUnexpected)
//	  ▼
//	time up / --events reached ─▶ threads finish their transaction ─▶ the
//	table is checked (VerifyReport) ─▶ RunResult
//	  ▼
//	one Cell per (lock, threads): medians, means, spread, ratio to the baseline
//	  ▼
//	Result.WriteComparison / WriteCSV / WriteJSON (lockbench draws the plot)
//
// The driver talks to the table through the small DB and Tx interfaces, so
// that other tables can be measured, and its own cost is measured against
// OpenNoop, a table that does nothing (MeasureDriverOverhead).
//
// # Costs
//
// A plan runs len(Threads) × len(Locks) × 2 × Pairs runs of Time each, on
// a fresh table each (preparing 10,000 rows takes a fraction of a
// second in memory). The driver's own cost per transaction is about a
// microsecond; MeasureDriverOverhead reports it.
//
// # Errors
//
// RunPlan and Run return a *txnlock.OptionsError for bad options (every
// problem at once), the context's error when it ends (with the runs that
// finished), and ErrUnexpected, wrapped with the statement, for a
// statement error other than a deadlock or a lock not granted.
//
// # Why mirrored pairs
//
// A shared machine drifts, over minutes and in phases of tens of seconds.
// Running the lock kinds back to back in mirrored order (point, range,
// range, point, then range, point, point, range: every second pair starts
// from the other end, so that no kind always runs in the middle of a
// pair), each on a fresh table, puts every kind's mean at the same moment
// of the drift; the spread of a cell, (max-min)/mean of its runs, says how
// much its runs agree. Each pair also gives its own ratio of a kind's QPS
// to the baseline's, its runs being adjacent in time: Cell.Ratio is the
// median of those ratios with an order-statistics interval (the k-th
// smallest to the k-th largest, which holds the median with a known
// probability), and Result.WriteComparison says in words which rows' intervals
// reach past 1, wider than the difference they measure. The table's QPS
// columns are medians too (Cell.QPSMedian, of the runs), so that every
// figure of a row is the same statistic.
//
// # Slap
//
// RunSlap is mysqlslap with --auto-generate-sql: for each lock kind and
// concurrency, Iterations times, a fresh table and N clients that run
// NumberOfQueries/N autocommit statements, timed from the first to the
// last. Unlike mysqlslap, which stops at the first error, a deadlock
// victim or a statement whose lock was not granted is rolled back and run
// again, and the report counts them, with the deadlock searches the
// detector cut short at its limits, and a row check.
//
// # Throttling and digests
//
// As ProxySQL does, a global delay and per-digest delay rules hold a
// statement back before it runs (its locks taken earlier in the
// transaction stay held), and per-digest statistics (count, sum/min/max
// time, rows) show the effect. A digest is a statement shape on one
// table, e.g. "UPDATE sbtest1 SET k=k+1 WHERE id=?"; its id is a 64-bit
// hash of that text.
//
// # Concurrency
//
// RunPlan, Run and RunSlap run their threads themselves and return when
// every one has ended. An Observer's methods are called one at a time,
// from the goroutine that called RunPlan. Results are not shared: read
// them after the call returns.
package bench

// For maintainers: each driver thread owns its session, histogram and
// digest statistics; the interval reporter reads only atomic counters;
// results are merged after the threads end. A run's transaction is
// Workload.event(session): session.pre applies the delays and starts the
// clock, the Tx statement runs, session.post records the digest statistics
// and query count. summarize makes the Cells. The DB and Tx interfaces
// live in table.go. (This comment is not the package doc; go doc does not
// show it.)
