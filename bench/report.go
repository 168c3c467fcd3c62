package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteReport prints the run as sysbench prints its final report, then
// the lock counts, the table check and the digest statistics.
func (r *RunResult) WriteReport(w io.Writer) {
	secs := r.Elapsed.Seconds()
	ps := func(n uint64) string { return fmt.Sprintf("(%.2f per sec.)", perSec(n, r.Elapsed)) }
	fmt.Fprintf(w, "== run %d: %s, lock %s, %d threads ==\n", r.Seq, r.Workload, r.Lock, r.Threads)
	fmt.Fprintf(w, "SQL statistics:\n")
	fmt.Fprintf(w, "    queries performed:\n")
	fmt.Fprintf(w, "        read:                            %d\n", r.Reads)
	fmt.Fprintf(w, "        write:                           %d\n", r.Writes)
	fmt.Fprintf(w, "        other:                           %d\n", r.Other)
	fmt.Fprintf(w, "        total:                           %d\n", r.Queries())
	fmt.Fprintf(w, "    transactions:                        %-10d %s\n", r.Txns, ps(r.Txns))
	fmt.Fprintf(w, "    queries:                             %-10d %s\n", r.Queries(), ps(r.Queries()))
	fmt.Fprintf(w, "    ignored errors:                      %-10d %s\n", r.Errors(), ps(r.Errors()))
	fmt.Fprintf(w, "        deadlocks:                       %-10d %s\n", r.Deadlocks, ps(r.Deadlocks))
	fmt.Fprintf(w, "        lock wait timeouts:              %-10d %s\n", r.Timeouts, ps(r.Timeouts))
	fmt.Fprintf(w, "    reconnects:                          %-10d %s\n", 0, ps(0))
	fmt.Fprintf(w, "\nGeneral statistics:\n")
	fmt.Fprintf(w, "    total time:                          %.4fs\n", secs)
	fmt.Fprintf(w, "    total number of events:              %d\n", r.Txns)
	fmt.Fprintf(w, "\nLatency (ms):\n")
	fmt.Fprintf(w, "         min:                            %10.2f\n", ms(r.LatMin))
	fmt.Fprintf(w, "         avg:                            %10.2f\n", ms(r.LatAvg))
	fmt.Fprintf(w, "         max:                            %10.2f\n", ms(r.LatMax))
	fmt.Fprintf(w, "         95th percentile:                %10.2f\n", ms(r.LatP95))
	fmt.Fprintf(w, "         sum:                            %10.2f\n", ms(r.LatSum))
	fmt.Fprintf(w, "\nThreads fairness:\n")
	fmt.Fprintf(w, "    events (avg/stddev):           %.4f/%.2f\n", r.EventsAvg, r.EventsStddev)
	fmt.Fprintf(w, "    execution time (avg/stddev):   %.4f/%.2f\n", r.ExecAvg, r.ExecStddev)
	fmt.Fprintf(w, "\nLocks:\n")
	fmt.Fprintf(w, "    lock requests per transaction:       %.2f%s\n", r.LocksPerTxn(), myRocksLocks(r.Workload, r.Lock))
	fmt.Fprintf(w, "    lock waits:                          %d (%.3f ms average)\n", r.LockStats.Waited, avgMs(r.LockStats.WaitTime, r.LockStats.Waited))
	fmt.Fprintf(w, "    deadlock detector:                   %d cycles, %d breaker trips\n", r.Detector.Deadlocks, r.Detector.Trips)
	fmt.Fprintf(w, "    table check:                         %s\n", verifyLine(r.Lock, r.Verify))
	if len(r.Digests) > 0 {
		fmt.Fprintf(w, "\nDigest statistics:\n")
		writeDigestStats(w, r.Digests)
	}
	fmt.Fprintln(w)
}

// WriteLine prints the run on one line, as the RESULT lines of the
// RocksDB comparison script do, then its digest statistics, if any.
func (r *RunResult) WriteLine(w io.Writer) {
	fmt.Fprintf(w, "run %d: %s lock=%s threads=%d secs=%.2f tps=%.1f qps=%.1f lat_avg_ms=%.3f lat_p95_ms=%.3f deadlocks=%d timeouts=%d locks_per_txn=%.2f check=%s\n",
		r.Seq, r.Workload, r.Lock, r.Threads, r.Elapsed.Seconds(), r.TPS(), r.QPS(), ms(r.LatAvg), ms(r.LatP95),
		r.Deadlocks, r.Timeouts, r.LocksPerTxn(), verifyLine(r.Lock, r.Verify))
	if len(r.Digests) > 0 {
		writeDigestStats(w, r.Digests)
	}
}

// verifyLine renders the table check. Without locks concurrent writers
// corrupt the table, as documented: that is reported, not alarmed about.
func verifyLine(l LockKind, v VerifyReport) string {
	if v.OK() {
		return fmt.Sprintf("ok (%d rows)", v.Rows)
	}
	if l == LockNone {
		return fmt.Sprintf("inconsistent, as expected without locks (%d rows, %d problem(s) shown)", v.Rows, len(v.Problems))
	}
	return fmt.Sprintf("FAILED (%d rows, %d duplicate ids): %s", v.Rows, v.DuplicateIDs, strings.Join(v.Problems, "; "))
}

// myRocksLocks quotes MyRocks' published lock counts per transaction
// beside ours.
func myRocksLocks(w Workload, l LockKind) string {
	if w != OLTPWriteOnly {
		if w == OLTPUpdateNonIndex && l.LocksRows() {
			return " (MyRocks' published figure: 1)"
		}
		return ""
	}
	switch l {
	case LockPoint:
		return " (MyRocks' published figure: 3)"
	case LockRange:
		return " (MyRocks' published figure: 8; 4 without the secondary index)"
	case LockPointSK:
		return " (range's requests, to the point manager)"
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func avgMs(d time.Duration, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return ms(d) / float64(n)
}

// WriteComparison prints the plan's comparison table: the median QPS per
// thread count for each lock kind, each other kind's ratio to the first (PairedRatio, with
// its interval when the plan ran several pairs), and the largest spread
// of the row's cells; then, in words, the rows whose interval is wider
// than the difference it measures.
func (res *Result) WriteComparison(w io.Writer) {
	o := res.Options
	locks := o.Locks
	fmt.Fprintf(w, "%s, layout %s, storage %s, %d table(s) x %d rows%s; every figure a median: QPS of the %d runs per cell, ratios of the %d mirrored pair(s)\n",
		o.Workload, o.Layout, o.Storage, o.Tables, o.TableSize, noSK(o.NoSK), 2*o.Pairs, o.Pairs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Threads\t")
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\t", l)
	}
	for _, l := range locks[1:] {
		fmt.Fprintf(tw, "%s\t", ratioHeader(l, locks[0]))
	}
	fmt.Fprintf(tw, "spread\t\n")
	var notes []string
	conf := 0.0
	for _, t := range o.Threads {
		fmt.Fprintf(tw, "%d\t", t)
		spread, cells := 0.0, 0
		for _, l := range locks {
			c, ok := cell(res.Cells, l, t)
			if !ok {
				fmt.Fprintf(tw, "-\t")
				continue
			}
			spread, cells = max(spread, c.SpreadPct), cells+1
			fmt.Fprintf(tw, "%s\t", thousands(c.QPSMedian))
		}
		for _, l := range locks[1:] {
			r, ok := res.PairedRatio(l, t)
			if !ok {
				fmt.Fprintf(tw, "-\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t", r)
			conf = max(conf, r.Confidence)
			if r.Pairs > 1 && !r.Resolved() {
				notes = append(notes, fmt.Sprintf("at %s %s/%s = %s: the interval reaches past 100, wider than the %.1f-point difference it measures, so this run does not tell %s from %s there",
					threadsWord(t), l, locks[0], r, 100*math.Abs(r.Median-1), l, locks[0]))
			}
		}
		if cells == 0 {
			fmt.Fprintf(tw, "-\t\n")
		} else {
			fmt.Fprintf(tw, "%.1f%%\t\n", spread)
		}
	}
	tw.Flush()
	if len(locks) > 1 {
		writeRatioLegend(w, o, conf, notes)
	}
	fmt.Fprintf(w, "spread = (max-min)/mean of a cell's runs, the larger of the row's cells\n")
	writeLockCounts(w, res)
	writeErrors(w, res)
	writeCosts(w, res)
}

// threadsWord is "1 thread" or "n threads".
func threadsWord(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

// ratioHeader heads the column of l's ratio to the baseline.
func ratioHeader(l, base LockKind) string { return fmt.Sprintf("%s/%s %%", l, base) }

// writeRatioLegend says how the ratio columns are made, and then which
// rows they do not resolve.
func writeRatioLegend(w io.Writer, o Options, conf float64, notes []string) {
	fmt.Fprintf(w, "kind/%s %% = the median over the mirrored pairs of each pair's own ratio, 100 x the kind's QPS / %s's in the pair (a pair's runs are adjacent in time, so the machine's drift moves both sides alike, which the quotient of the QPS columns does not undo)", o.Locks[0], o.Locks[0])
	if conf == 0 {
		fmt.Fprintf(w, "; with one pair per thread count it has no interval (--pairs 5 or more gives a 90%% one)\n")
		return
	}
	fmt.Fprintf(w, "; in parentheses the interval that holds the median with %.0f%% confidence (order statistics of the pairs' ratios)\n", 100*conf)
	if len(notes) == 0 {
		fmt.Fprintf(w, "every row's interval lies on one side of 100: each row tells which kind is faster\n")
		return
	}
	for _, n := range notes {
		fmt.Fprintf(w, "not resolved: %s\n", n)
	}
}

// thousands renders x rounded to an integer, with a comma every three
// digits: 137,209.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func noSK(b bool) string {
	if b {
		return ", no secondary index"
	}
	return ""
}

// writeLockCounts prints the lock requests per transaction of each kind.
func writeLockCounts(w io.Writer, res *Result) {
	var parts []string
	for _, l := range res.Options.Locks {
		var sum float64
		var n int
		for _, c := range res.Cells {
			if c.Lock == l && c.Runs > 0 {
				sum += c.LocksPerTxn
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f%s", l, sum/float64(n), myRocksLocks(res.Options.Workload, l)))
		}
	}
	fmt.Fprintf(w, "lock requests per transaction: %s\n", strings.Join(parts, ", "))
}

// writeErrors prints the ignored errors and failed table checks, if any.
func writeErrors(w io.Writer, res *Result) {
	var dl, to uint64
	bad, none := 0, 0
	for _, c := range res.Cells {
		dl += c.Deadlocks
		to += c.Timeouts
		switch {
		case c.VerifyOK:
		case c.Lock == LockNone:
			none++
		default:
			bad++
		}
	}
	fmt.Fprintf(w, "ignored errors: %d deadlocks, %d lock wait timeouts; table checks: ", dl, to)
	if bad == 0 {
		fmt.Fprintf(w, "all ok")
	} else {
		fmt.Fprintf(w, "%d cell(s) FAILED", bad)
	}
	if none > 0 {
		fmt.Fprintf(w, " (lock none: %d cell(s) inconsistent, as expected without locks)", none)
	}
	fmt.Fprintln(w)
}

// writeCosts prints the driver's own time per transaction, if measured,
// and the time per transaction at one thread of each lock kind, if a
// 1-thread run happened, so that the lock manager's share is visible.
func writeCosts(w io.Writer, res *Result) {
	var parts []string
	none, hasNone := cell(res.Cells, LockNone, 1)
	for _, l := range res.Options.Locks {
		c, ok := cell(res.Cells, l, 1)
		if !ok || c.TPS == 0 {
			continue
		}
		per := 1e6 / c.TPS
		s := fmt.Sprintf("%s %.2f µs", l, per)
		if hasNone && l != LockNone && none.TPS > 0 {
			s += fmt.Sprintf(" (locking %.0f%%)", 100*(per-1e6/none.TPS)/per)
		}
		parts = append(parts, s)
	}
	switch {
	case len(parts) > 0 && res.DriverOverhead > 0:
		fmt.Fprintf(w, "time per transaction at 1 thread: driver alone %.2f µs, %s\n", us(res.DriverOverhead), strings.Join(parts, ", "))
	case len(parts) > 0:
		fmt.Fprintf(w, "time per transaction at 1 thread: %s\n", strings.Join(parts, ", "))
	case res.DriverOverhead > 0:
		fmt.Fprintf(w, "driver's own time per transaction (1 thread, no table): %.2f µs\n", us(res.DriverOverhead))
	}
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }
