package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/txnlock/txnlock"
)

// recorder is an Observer that records the plan's runs.
type recorder struct{ starts, dones []string }

func (r *recorder) RunStart(seq, total int, l LockKind, th int) {
	r.starts = append(r.starts, string(l)+"/"+itoa(th))
}
func (r *recorder) RunProgress(float64) {}
func (r *recorder) RunDone(res *RunResult) {
	r.dones = append(r.dones, string(res.Lock)+"/"+itoa(res.Threads))
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRunPlanMirrored: per thread count the kinds run point, range,
// range, point, each on a freshly opened table; cells average the runs.
func TestRunPlanMirrored(t *testing.T) {
	var o fakeOpener
	var rec recorder
	opts := Options{Locks: []LockKind{LockPoint, LockRange}, Threads: []int{1, 3}, Events: 50, Pairs: 1, TableOptions: TableOptions{TableSize: 100}}
	res, err := RunPlan(context.Background(), o.open, opts, &rec, nil)
	require.NoError(t, err)
	want := []string{"point/1", "range/1", "range/1", "point/1", "point/3", "range/3", "range/3", "point/3"}
	assert.Equal(t, want, rec.starts)
	assert.Equal(t, want, rec.dones)
	require.Len(t, o.opened, 8, "a fresh table per run")
	var opened []string
	for _, c := range o.opened {
		opened = append(opened, string(c.Lock))
		assert.Equal(t, 100, c.TableSize)
	}
	assert.Equal(t, []string{"point", "range", "range", "point", "point", "range", "range", "point"}, opened)
	require.Len(t, res.Cells, 4)
	for i, r := range res.Runs {
		assert.Equal(t, i+1, r.Seq)
	}
	for _, c := range res.Cells {
		assert.Equal(t, 2, c.Runs)
		assert.Equal(t, OLTPWriteOnly, c.Workload)
		assert.True(t, c.VerifyOK)
	}
}

func TestRunPlanInvalid(t *testing.T) {
	var o fakeOpener
	_, err := RunPlan(context.Background(), o.open, Options{Threads: []int{0}, Workload: "oltp_nope"}, nil, nil)
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	assert.Empty(t, o.opened)
}

func TestRunPlanOpenError(t *testing.T) {
	bad := errors.New("no table")
	_, err := RunPlan(context.Background(), func(context.Context, TableConfig) (DB, error) { return nil, bad },
		Options{Threads: []int{1}, Events: 1}, nil, nil)
	require.ErrorIs(t, err, bad)
}

// runAt builds a run result with tps and qps known exactly.
func runAt(l LockKind, threads int, txns uint64, lat time.Duration) *RunResult {
	return &RunResult{
		Workload: OLTPWriteOnly, Lock: l, Threads: threads, Elapsed: time.Second,
		Txns: txns, Writes: 4 * txns, Other: 2 * txns, Deadlocks: 1, Timeouts: 2,
		LatAvg: lat, LatP95: 2 * lat, LatMax: 10 * lat, LockRequests: 3 * txns,
		Verify: VerifyReport{Rows: 100},
	}
}

// testResult is a fixed plan result for the report tests.
func testResult() *Result {
	opts := Options{Locks: []LockKind{LockPoint, LockRange}, Threads: []int{1, 100}, Time: time.Second, Pairs: 1}
	opts.EnsureDefaults()
	runs := []*RunResult{
		runAt(LockPoint, 1, 1000, time.Millisecond), runAt(LockRange, 1, 900, time.Millisecond),
		runAt(LockRange, 1, 1100, time.Millisecond), runAt(LockPoint, 1, 1000, time.Millisecond),
		runAt(LockPoint, 100, 2000, 2*time.Millisecond), runAt(LockRange, 100, 1000, 4*time.Millisecond),
		runAt(LockRange, 100, 1000, 4*time.Millisecond), runAt(LockPoint, 100, 2000, 2*time.Millisecond),
	}
	for i, r := range runs {
		r.Seq = i + 1
	}
	return &Result{Options: opts, Runs: runs, Cells: summarize(runs, opts.Locks, opts.Threads), DriverOverhead: 800 * time.Nanosecond}
}

func TestSummarize(t *testing.T) {
	res := testResult()
	c, ok := cell(res.Cells, LockRange, 1)
	require.True(t, ok)
	assert.Equal(t, 2, c.Runs)
	assert.InDelta(t, 1000, c.TPS, 1e-9)
	assert.InDelta(t, 6000, c.QPS, 1e-9)
	assert.InDelta(t, 20, c.SpreadPct, 1e-9, "(1100-900)/1000")
	assert.InDelta(t, 3, c.LocksPerTxn, 1e-9)
	assert.EqualValues(t, 2, c.Deadlocks)
	assert.EqualValues(t, 4, c.Timeouts)
	c, _ = cell(res.Cells, LockPoint, 100)
	assert.Zero(t, c.SpreadPct)
	assert.Equal(t, 4*time.Millisecond, c.LatP95)
	assert.Equal(t, 20*time.Millisecond, c.LatMax)
	_, ok = cell(res.Cells, LockNone, 1)
	assert.False(t, ok)
}

// TestWriteComparison pins the comparison table.
func TestWriteComparison(t *testing.T) {
	var buf bytes.Buffer
	testResult().WriteComparison(&buf)
	want := `oltp_write_only, layout shared, storage mem, 1 table(s) x 10000 rows; every figure a median: QPS of the 2 runs per cell, ratios of the 1 mirrored pair(s)
  Threads   point  range  range/point %  spread
        1   6,000  6,000          100.0   20.0%
      100  12,000  6,000           50.0    0.0%
kind/point % = the median over the mirrored pairs of each pair's own ratio, 100 x the kind's QPS / point's in the pair (a pair's runs are adjacent in time, so the machine's drift moves both sides alike, which the quotient of the QPS columns does not undo); with one pair per thread count it has no interval (--pairs 5 or more gives a 90% one)
spread = (max-min)/mean of a cell's runs, the larger of the row's cells
lock requests per transaction: point 3.00 (MyRocks' published figure: 3), range 3.00 (MyRocks' published figure: 8; 4 without the secondary index)
ignored errors: 8 deadlocks, 16 lock wait timeouts; table checks: all ok
time per transaction at 1 thread: driver alone 0.80 µs, point 1000.00 µs, range 1000.00 µs
`
	assert.Equal(t, want, buf.String())
}

// TestPairedRatios: the machine runs at half speed during the second of
// three mirrored pairs. Each pair's own ratio stays 0.9; the ratio of the
// means moves with where the slow phase fell.
func TestPairedRatios(t *testing.T) {
	locks := []LockKind{LockPoint, LockRange}
	var runs []*RunResult
	seq := 0
	for pair, speed := range []float64{1, 0.5, 1} {
		for _, l := range runOrder(locks, 1) {
			qps := 1000 * speed
			if l == LockRange {
				qps *= 0.9
			}
			if pair == 1 && l == LockRange {
				qps *= 0.5 // the slow phase hits range's runs harder
			}
			seq++
			runs = append(runs, &RunResult{Lock: l, Threads: 4, Seq: seq, Elapsed: time.Second, Txns: uint64(qps / 6), Other: uint64(qps/6) * 2, Writes: uint64(qps/6) * 4})
		}
	}
	rs := pairedRatios(runs, locks, 4, LockRange)
	require.Len(t, rs, 3)
	assert.InDelta(t, 0.9, rs[0], 0.01)
	assert.InDelta(t, 0.45, rs[1], 0.01)
	assert.InDelta(t, 0.9, median(rs), 0.01, "the median ignores the one odd pair")
	assert.Empty(t, pairedRatios(runs[:3], locks, 4, LockRange), "an incomplete pair counts for nothing")
	assert.Empty(t, pairedRatios(runs, locks, 8, LockRange))
}

// TestWriteRunReport: the full report and the one-line form of a run,
// each with its digest statistics.
func TestWriteRunReport(t *testing.T) {
	r := runAt(LockPoint, 8, 1000, time.Millisecond)
	r.Seq, r.LatMin, r.LatSum = 3, time.Millisecond/2, time.Second
	r.Digests = []DigestStat{{Digest: "0x1", Text: "BEGIN", Count: 1000, Sum: time.Second, Min: time.Microsecond, Max: time.Millisecond}}
	var buf bytes.Buffer
	r.WriteReport(&buf)
	out := buf.String()
	for _, want := range []string{
		"== run 3: oltp_write_only, lock point, 8 threads ==",
		"        write:                           4000\n",
		"    transactions:                        1000       (1000.00 per sec.)",
		"    queries:                             6000       (6000.00 per sec.)",
		"    ignored errors:                      3          (3.00 per sec.)",
		"        deadlocks:                       1 ",
		"        lock wait timeouts:              2 ",
		"         min:                                  0.50",
		"         95th percentile:                      2.00",
		"         sum:                               1000.00",
		"    events (avg/stddev):",
		"    lock requests per transaction:       3.00 (MyRocks' published figure: 3)",
		"    table check:                         ok (100 rows)",
		"Digest statistics:",
	} {
		assert.Contains(t, out, want)
	}
	buf.Reset()
	r.WriteLine(&buf)
	line, digests, _ := strings.Cut(buf.String(), "\n")
	assert.Equal(t, "run 3: oltp_write_only lock=point threads=8 secs=1.00 tps=1000.0 qps=6000.0 lat_avg_ms=1.000 lat_p95_ms=2.000 deadlocks=1 timeouts=2 locks_per_txn=3.00 check=ok (100 rows)", line)
	assert.Contains(t, digests, "0x1     BEGIN", "the digest statistics follow the line")
}

// TestWriteCSV: one header line, then one row per cell, nothing else.
func TestWriteCSV(t *testing.T) {
	res := testResult()
	var buf bytes.Buffer
	require.NoError(t, res.WriteCSV(&buf))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(res.Cells))
	assert.Equal(t, "workload,lock,threads,runs,tps,qps,lat_avg_ms,lat_p95_ms,lat_max_ms,deadlocks,timeouts,locks_per_txn,spread_pct,verify_ok,ratio_pct,ratio_lo_pct,ratio_hi_pct,ratio_confidence_pct,ratio_pairs,qps_median,qps_lo,qps_hi", lines[0])
	recs, err := csv.NewReader(strings.NewReader(buf.String())).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"oltp_write_only", "range", "1", "2", "1000.00", "6000.00", "1.000", "2.000", "10.000", "2", "4", "3.00", "20.0", "true", "100.00", "", "", "", "1", "6000.00", "5400.00", "6600.00"}, recs[2])
	assert.Equal(t, []string{"", "", "", "", ""}, recs[1][14:19], "the baseline has no ratio")
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, testResult().WriteJSON(&buf))
	var doc struct {
		Workload string `json:"workload"`
		Cells    []Cell `json:"cells"`
		Runs     []struct {
			Lock string  `json:"lock"`
			Txns float64 `json:"transactions"`
		} `json:"runs"`
		Overhead int64 `json:"driver_overhead_ns_per_txn"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, "oltp_write_only", doc.Workload)
	assert.Len(t, doc.Cells, 4)
	assert.Len(t, doc.Runs, 8)
	assert.EqualValues(t, 800, doc.Overhead)
	assert.Equal(t, "range", doc.Runs[1].Lock)
}

// TestOptionsValidate: every problem is reported at once.
func TestOptionsValidate(t *testing.T) {
	o := Options{
		Workload: "oltp_nope", Locks: []LockKind{"row", LockPoint, LockPoint}, Threads: []int{0, 4},
		Time: -time.Second, Events: -1, Tables: -2, Pairs: -1, ReportInterval: -1,
		TableOptions:    TableOptions{TableSize: -1, Layout: "diagonal", Storage: "tape", LockTimeout: -5 * time.Second},
		ThrottleOptions: ThrottleOptions{Delay: -1},
	}
	err := o.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	for _, want := range []string{"workload", `lock kind "row"`, "listed twice", "threads 0", "time -1s", "events -1",
		"table-size", "tables -2", "cf-layout", "storage", "lock-timeout", "pairs", "report-interval", "delay"} {
		assert.Contains(t, err.Error(), want)
	}
	var empty Options
	assert.ErrorContains(t, empty.Validate(), "threads: none given")
	var d Options
	d.EnsureDefaults()
	require.NoError(t, d.Validate())
	assert.Equal(t, "--workload=oltp_write_only --lock=point,range --threads=1,2,4,8,16,32,64,100 --time=10s --events=0 --table-size=10000 --tables=1 --cf-layout=shared --storage=mem --sync=false --no-sk=false --lock-timeout=5s --pairs=1 --seed=1", d.String())
}

// TestVerifyLines: a failed check is FAILED under a lock kind, and the
// documented corruption without locks is reported as expected.
func TestVerifyLines(t *testing.T) {
	bad := VerifyReport{Rows: 10, Problems: []string{"SK entry x has no row"}}
	assert.Contains(t, verifyLine(LockPoint, bad), "FAILED (10 rows, 0 duplicate ids): SK entry x has no row")
	assert.Contains(t, verifyLine(LockNone, bad), "inconsistent, as expected without locks")
	res := testResult()
	res.Options.Locks = []LockKind{LockPoint, LockRange, LockNone}
	none := runAt(LockNone, 1, 1000, time.Millisecond)
	none.Verify = bad
	res.Runs = append(res.Runs, none)
	res.Cells = summarize(res.Runs, res.Options.Locks, res.Options.Threads)
	var buf bytes.Buffer
	writeErrors(&buf, res)
	assert.Equal(t, "ignored errors: 9 deadlocks, 18 lock wait timeouts; table checks: all ok (lock none: 1 cell(s) inconsistent, as expected without locks)\n", buf.String())
	res.Runs[0].Verify = bad
	res.Cells = summarize(res.Runs, res.Options.Locks, res.Options.Threads)
	buf.Reset()
	writeErrors(&buf, res)
	assert.Contains(t, buf.String(), "1 cell(s) FAILED")
	buf.Reset()
	writeCosts(&buf, res)
	assert.Equal(t, "time per transaction at 1 thread: driver alone 0.80 µs, point 1000.00 µs (locking 0%), range 1000.00 µs (locking 0%), none 1000.00 µs\n", buf.String())
}
