package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/txnlock/txnlock/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cli runs the command in-process and returns its exit code and output.
func cli(t *testing.T, open bench.Opener, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := lockbench(context.Background(), args, &stdout, &stderr, open)
	return code, stdout.String(), stderr.String()
}

// TestMainJob: no arguments is the README's comparison (parsed, not run:
// it takes minutes), with enough pairs for each ratio's interval.
func TestMainJob(t *testing.T) {
	o, f, err := parseRun(mainJob, &bytes.Buffer{}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, bench.OLTPWriteOnly, o.Workload)
	assert.Equal(t, []bench.LockKind{bench.LockPoint, bench.LockRange}, o.Locks)
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 100}, o.Threads)
	assert.Equal(t, time.Second, o.Time)
	assert.Equal(t, bench.StorageMem, o.Storage)
	assert.Equal(t, bench.LayoutShared, o.Layout)
	assert.Equal(t, 5, o.Pairs, "five pairs: a 94% interval from min to max")
	assert.Equal(t, "lockbench.png", f.plot)
	assert.Equal(t, "table", f.format)
	runs := len(o.Threads) * len(o.Locks) * 2 * o.Pairs
	assert.LessOrEqual(t, time.Duration(runs)*o.Time, 160*time.Second, "about three minutes with prepare")
}

// TestRunEveryFlag: every run flag at once, csv on stdout and nothing
// else; reports, interval lines and the plot notice on stderr.
func TestRunEveryFlag(t *testing.T) {
	dir := t.TempDir()
	plot := filepath.Join(dir, "qps.png")
	code, stdout, stderr := cli(t, bench.OpenNoop, "run",
		"--workload", "oltp_read_write", "--lock", "point,range,none", "--threads", "1,2",
		"--time", "0.05", "--events", "1000000", "--table-size", "500", "--tables", "2",
		"--cf-layout", "per-index", "--storage", "disk", "--dir", dir, "--sync", "--no-sk",
		"--lock-timeout", "2s", "--report-interval", "20ms", "--pairs", "1", "--format", "csv",
		"--plot", plot, "--per-run", "full", "--delay", "0", "--delay-rule", "SELECT c FROM sbtest2 WHERE id=?=1us",
		"--digest-stats", "--seed", "9", "--driver-overhead", "10ms")
	require.Equal(t, 0, code, stderr)
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	require.NoError(t, err, stdout)
	require.Len(t, recs, 1+3*2, "a header and one row per (lock, threads)")
	for _, want := range []string{"workload", "lock", "threads", "tps", "qps", "lat_avg_ms", "lat_p95_ms", "lat_max_ms", "deadlocks", "timeouts", "locks_per_txn", "spread_pct", "ratio_pct"} {
		assert.Contains(t, recs[0], want)
	}
	assert.Equal(t, []string{"oltp_read_write", "point", "1"}, recs[1][:3])
	assert.Equal(t, []string{"oltp_read_write", "none", "2"}, recs[6][:3])
	assert.Contains(t, stderr, "SQL statistics:")
	assert.Contains(t, stderr, "Digest statistics:")
	assert.Contains(t, stderr, "SELECT c FROM sbtest2 WHERE id=?")
	assert.Contains(t, stderr, "] thds: 2 tps: ")
	assert.Contains(t, stderr, "wrote "+plot)
	f, err := os.Open(plot)
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err, "the plot is a PNG")
}

// TestRunTable: the default format prints the options, each run and the
// comparison table.
func TestRunTable(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenNoop, "run", "--threads", "1,4", "--events", "200", "--time", "0", "--per-run", "line")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "lockbench run --workload=oltp_write_only --lock=point,range --threads=1,4")
	assert.Equal(t, 8, strings.Count(stdout, "\nrun "), stdout)
	assert.Regexp(t, `Threads\s+point\s+range\s+range/point %\s+spread`, stdout)
	assert.Contains(t, stdout, "time per transaction at 1 thread: driver alone")
	assert.Empty(t, stderr)
}

func TestRunJSON(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenNoop, "run", "--threads", "2", "--events", "100", "--workload", "oltp_point_select", "--format", "json", "--per-run", "none")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Workload string           `json:"workload"`
		Cells    []map[string]any `json:"cells"`
		Runs     []map[string]any `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "oltp_point_select", doc.Workload)
	assert.Len(t, doc.Cells, 2)
	assert.Len(t, doc.Runs, 4)
}

// TestRunSBTest: the real table, on disk, every layout flag.
func TestRunSBTest(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenSBTest, "run", "--threads", "2", "--events", "100", "--time", "0",
		"--table-size", "300", "--tables", "2", "--cf-layout", "per-table", "--storage", "disk", "--dir", t.TempDir(),
		"--sync", "--format", "csv", "--driver-overhead", "0")
	require.Equal(t, 0, code, stderr)
	recs, col := readCSV(t, stdout)
	require.Len(t, recs, 3)
	lpt, err := strconv.ParseFloat(recs[1][col["locks_per_txn"]], 64)
	require.NoError(t, err)
	assert.InDelta(t, 3, lpt, 0.1, "point")
	assert.Equal(t, "true", recs[2][col["verify_ok"]])
}

// readCSV parses lockbench's CSV output: its records, the header first,
// and each column's index by name.
func readCSV(t *testing.T, out string) ([][]string, map[string]int) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs, "no header")
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return recs, col
}

// TestRunPointSK: point-sk sends range's requests to the point manager (7
// per oltp_write_only transaction, as range; point sends 3), in one run
// with both baselines.
func TestRunPointSK(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenSBTest, "run", "--lock", "point,range,point-sk", "--threads", "1",
		"--events", "50", "--time", "0", "--table-size", "200", "--format", "csv", "--driver-overhead", "0")
	require.Equal(t, 0, code, stderr)
	recs, col := readCSV(t, stdout)
	require.Len(t, recs, 4)
	want := map[string]float64{"point": 3, "range": 7, "point-sk": 7}
	for _, r := range recs[1:] {
		lpt, err := strconv.ParseFloat(r[col["locks_per_txn"]], 64)
		require.NoError(t, err)
		assert.InDelta(t, want[r[col["lock"]]], lpt, 0.2, r[col["lock"]])
		assert.Equal(t, "true", r[col["verify_ok"]], r[col["lock"]])
	}
}

// TestThrottling: ProxySQL's throttling with a 20 ms rule on the point select:
// that digest's min time and the transactions' min latency are >= 20 ms.
func TestThrottling(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenSBTest, "run", "--workload", "oltp_point_select", "--lock", "point",
		"--threads", "1", "--events", "3", "--time", "0", "--table-size", "100",
		"--delay-rule", "SELECT c FROM sbtest1 WHERE id=?=20ms", "--digest-stats", "--driver-overhead", "0")
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`(?m)^\s+min:\s+([0-9.]+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	minMs, _ := strconv.ParseFloat(m[1], 64)
	assert.GreaterOrEqual(t, minMs, 20.0)
	d := regexp.MustCompile(`(?m)^(0x[0-9A-F]{16})\s+SELECT c FROM sbtest1 WHERE id=\?\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`).FindStringSubmatch(stdout)
	require.NotNil(t, d, stdout)
	assert.Equal(t, "3", d[2], "count_star")
	minUs, _ := strconv.Atoi(d[4])
	assert.GreaterOrEqual(t, minUs, 20000, "min_time_us")
}

// TestSlapEveryFlag: every slap flag, on the real table.
func TestSlapEveryFlag(t *testing.T) {
	for _, format := range []string{"table", "csv", "json"} {
		code, stdout, stderr := cli(t, bench.OpenSBTest, "slap", "--concurrency", "5,10", "--iterations", "2",
			"--lock", "table,point", "--load-type", "mixed", "--autoinc-mode", "0", "--number-of-queries", "40",
			"--table-size", "10", "--cf-layout", "per-index", "--storage", "mem", "--lock-timeout", "3s",
			"--delay", "0", "--delay-rule", "INSERT INTO sbtest1 (k, c, pad) VALUES (?, ?, ?)=1us", "--digest-stats",
			"--seed", "4", "--format", format)
		require.Equal(t, 0, code, stderr)
		switch format {
		case "table":
			assert.Equal(t, 4, strings.Count(stdout, "Benchmark\n"))
			assert.Contains(t, stdout, "Average number of queries per client: 8")
			assert.Contains(t, stdout, "Number of clients running queries: 10")
			assert.Contains(t, stdout, "Deadlocks: 0 real / 0 breaker trips")
			assert.Contains(t, stdout, "Row check over 2 iterations: 60 rows expected, 60 found, 0 duplicate ids: ok")
			assert.Contains(t, stdout, "INSERT INTO sbtest1 (k, c, pad) VALUES (?, ?, ?)")
		case "csv":
			recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
			require.NoError(t, err)
			require.Len(t, recs, 5)
			assert.Equal(t, "true", recs[4][len(recs[4])-1])
		case "json":
			var doc struct {
				Results []bench.SlapResult `json:"results"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
			assert.Len(t, doc.Results, 4)
		}
	}
	code, _, stderr := cli(t, bench.OpenSBTest, "slap", "--concurrency", "3", "--iterations", "1", "--lock", "point",
		"--load-type", "update", "--autoinc-mode", "2", "--number-of-queries", "9", "--storage", "disk", "--dir", t.TempDir(), "--sync")
	require.Equal(t, 0, code, stderr)
}

// TestBadValues: each prints a clear error and exits 2.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--workload", "oltp_nope"}, `unknown workload "oltp_nope"`},
		{[]string{"run", "--threads", "0"}, "threads 0: must be at least 1"},
		{[]string{"run", "--threads", "1,x"}, `"x" is not an integer`},
		{[]string{"run", "--time", "-5"}, "time -5s is negative"},
		{[]string{"run", "--time", "soon"}, "neither a duration"},
		{[]string{"run", "--time", "0"}, "a run would never end"},
		{[]string{"run", "--lock", "point,row"}, `unknown lock kind "row"`},
		{[]string{"run", "--events", "-1"}, "events -1"},
		{[]string{"run", "--table-size", "0"}, "table-size 0"},
		{[]string{"run", "--tables", "0"}, "tables 0"},
		{[]string{"run", "--cf-layout", "diagonal"}, "unknown cf-layout"},
		{[]string{"run", "--storage", "tape"}, "unknown storage"},
		{[]string{"run", "--pairs", "0"}, "pairs 0"},
		{[]string{"run", "--report-interval", "-1"}, "report-interval"},
		{[]string{"run", "--lock-timeout", "-3s"}, "lock-timeout"},
		{[]string{"run", "--format", "xml"}, `"xml" is not one of table, csv, json`},
		{[]string{"run", "--per-run", "some"}, `"some" is not one of`},
		{[]string{"run", "--delay", "-1ms"}, "delay -1ms is negative"},
		{[]string{"run", "--delay-rule", "nodelay"}, "want DIGEST=DURATION"},
		{[]string{"run", "--delay-rule", "SELECT 1=5ms"}, "names no statement"},
		{[]string{"run", "--seed", "0"}, "seed 0"},
		{[]string{"run", "--driver-overhead", "-1s"}, "driver-overhead"},
		{[]string{"run", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"bench"}, `unknown command "bench"`},
		{[]string{"slap", "--concurrency", "0"}, "concurrency 0"},
		{[]string{"slap", "--iterations", "0"}, "iterations 0"},
		{[]string{"slap", "--lock", "myisam"}, `unknown lock kind "myisam"`},
		{[]string{"slap", "--load-type", "bulk"}, "unknown load-type"},
		{[]string{"slap", "--autoinc-mode", "3"}, "autoinc-mode 3"},
		{[]string{"slap", "--number-of-queries", "0"}, "number-of-queries 0"},
		{[]string{"slap", "--format", "xml"}, "not one of"},
		{[]string{"slap", "--delay-rule", "SELECT 1=5ms"}, "names no statement"},
	} {
		code, stdout, stderr := cli(t, failOpen(t), tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
	}
}

// failOpen fails the test if a bad command line gets as far as a table.
func failOpen(t *testing.T) bench.Opener {
	return func(context.Context, bench.TableConfig) (bench.DB, error) {
		t.Error("a table was opened")
		return nil, errors.New("unexpected open")
	}
}

// TestHelp: every way of asking for help prints it on stdout and exits 0.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "usage: lockbench [run|slap|help]"},
		{[]string{"-h"}, "usage: lockbench [run|slap|help]"},
		{[]string{"--help"}, "usage: lockbench [run|slap|help]"},
		{[]string{"run", "-h"}, "usage: lockbench run [flags]"},
		{[]string{"run", "--help"}, "usage: lockbench run [flags]"},
		{[]string{"run", "help"}, "usage: lockbench run [flags]"},
		{[]string{"slap", "--help"}, "usage: lockbench slap [flags]"},
		{[]string{"slap", "help"}, "usage: lockbench slap [flags]"},
	} {
		code, stdout, stderr := cli(t, failOpen(t), tc.args...)
		assert.Equal(t, exitOK, code, "%v", tc.args)
		assert.Contains(t, stdout, tc.want, "%v", tc.args)
		assert.Empty(t, stderr, "%v", tc.args)
	}
	_, stdout, _ := cli(t, failOpen(t), "run", "-h")
	assert.Contains(t, stdout, "-threads", "the flags are listed")
}

// TestBadValueOneLine: a bad flag value is one line of error and one line
// that points to -h, not the whole flag list.
func TestBadValueOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--threads", "1,x"}, {"run", "--no-such-flag"}, {"run", "--workload", "nope"}, {"slap", "--format", "xml"},
	} {
		code, stdout, stderr := cli(t, failOpen(t), args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Empty(t, stdout, "%v", args)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		require.Len(t, lines, 2, "%v: %s", args, stderr)
		assert.Equal(t, fmt.Sprintf("run \"lockbench %s -h\" for its flags", args[0]), lines[1])
	}
}

// TestFlagsWithoutCommand: flags alone change the main comparison: its
// defaults (five pairs, no per-run reports, the plot) hold for the rest.
func TestFlagsWithoutCommand(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "p.png")
	code, stdout, stderr := cli(t, bench.OpenNoop, "--threads", "4", "--events", "20", "--time", "0", "--driver-overhead", "0", "--plot", plot)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "lockbench run --workload=oltp_write_only --lock=point,range --threads=4 ")
	assert.Contains(t, stdout, " --pairs=5 ")
	assert.Contains(t, stdout, " --per-run=none --plot="+plot+" ")
	assert.NotContains(t, stdout, "== run", "no per-run report")
}

// TestCommandLineReproduces: the command line a run prints parses back to
// the same settings, every flag of the run included.
func TestCommandLineReproduces(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "a plot.svg")
	args := []string{"--threads", "1,2", "--events", "20", "--time", "0", "--pairs", "2", "--lock", "point,range,point-sk",
		"--per-run", "line", "--plot", plot, "--driver-overhead", "0", "--seed", "7", "--delay-rule", "0x9DE8BE03CC1190C2=1ms", "--digest-stats"}
	code, stdout, stderr := cli(t, bench.OpenNoop, args...)
	require.Equal(t, exitOK, code, stderr)
	line, _, _ := strings.Cut(stdout, "\n")
	require.True(t, strings.HasPrefix(line, "lockbench run "), line)
	printed := shellFields(t, strings.TrimPrefix(line, "lockbench run "))
	o1, f1, err := parseRun(append(slices.Clone(mainJob), args...), io.Discard, io.Discard)
	require.NoError(t, err)
	o2, f2, err := parseRun(printed, io.Discard, io.Discard)
	require.NoError(t, err, line)
	assert.Equal(t, o1, o2, line)
	assert.Equal(t, f1, f2, line)
}

// shellFields splits s as a POSIX shell splits words, for the quoting
// shellQuote does (single quotes).
func shellFields(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quotes in %q", s)
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestPlotCheckedBeforeRuns: a plot path that cannot be written, or in a
// format that is not drawn, fails before the first run and leaves no file.
func TestPlotCheckedBeforeRuns(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ plot, want string }{
		{filepath.Join(dir, "x.gif"), "the extension must be one of .png, .svg, .pdf"},
		{filepath.Join(dir, "noext"), "the extension must be one of"},
		{filepath.Join(dir, "missing", "x.png"), "cannot create a file there"},
		{dir + ".png", "cannot create a file there"},
	} {
		if strings.HasSuffix(tc.plot, dir+".png") {
			require.NoError(t, os.Mkdir(tc.plot, 0o755))
			tc.want = "is a directory"
		}
		code, _, stderr := cli(t, failOpen(t), "run", "--threads", "1", "--events", "1", "--plot", tc.plot)
		assert.Equal(t, exitUsage, code, tc.plot)
		assert.Contains(t, stderr, tc.want, tc.plot)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing left behind")
}

// TestPlotTwoPanels: the plot has the QPS panel and the ratio panel, with
// a series per other kind; each format is written.
func TestPlotTwoPanels(t *testing.T) {
	res := noopResult(t, "point,range,point-sk")
	dir := t.TempDir()
	for _, ext := range []string{"png", "svg", "pdf"} {
		file := filepath.Join(dir, "plot."+ext)
		require.NoError(t, writePlot(file, res), ext)
		fi, err := os.Stat(file)
		require.NoError(t, err)
		assert.Greater(t, fi.Size(), int64(1000), ext)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "plot.svg"))
	require.NoError(t, err)
	for _, want := range []string{"QPS (median of 4 runs", "ratio to point", "range/point", "point-sk/point", "% of point&#39;s QPS"} {
		assert.Contains(t, string(svg), want)
	}
}

// noopResult runs a tiny plan of locks against OpenNoop.
func noopResult(t *testing.T, locks string) *bench.Result {
	t.Helper()
	o, _, err := parseRun([]string{"--lock", locks, "--threads", "1,2", "--events", "30", "--time", "0", "--pairs", "2"}, io.Discard, io.Discard)
	require.NoError(t, err)
	res, err := bench.RunPlan(context.Background(), bench.OpenNoop, o, nil, io.Discard)
	require.NoError(t, err)
	return res
}

// TestRatioColumns: with three kinds every column has its own heading and
// each other kind its ratio to the baseline, in the table and the CSV.
func TestRatioColumns(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenNoop, "run", "--lock", "point,range,point-sk", "--threads", "1", "--events", "30",
		"--time", "0", "--per-run", "none", "--driver-overhead", "0")
	require.Equal(t, exitOK, code, stderr)
	m := regexp.MustCompile(`(?m)^\s*Threads\s.*$`).FindString(stdout)
	require.NotEmpty(t, m, stdout)
	heads := regexp.MustCompile(`\S+(?: %)?`).FindAllString(m, -1)
	assert.Equal(t, []string{"Threads", "point", "range", "point-sk", "range/point %", "point-sk/point %", "spread"}, heads)

	code, stdout, stderr = cli(t, bench.OpenNoop, "run", "--lock", "point,range,point-sk", "--threads", "1", "--events", "30",
		"--time", "0", "--pairs", "2", "--per-run", "none", "--driver-overhead", "0", "--format", "csv")
	require.Equal(t, exitOK, code, stderr)
	recs, col := readCSV(t, stdout)
	require.Len(t, recs, 4)
	assert.Empty(t, recs[1][col["ratio_pct"]], "the baseline")
	for _, r := range recs[2:] {
		assert.NotEmpty(t, r[col["ratio_pct"]], r[col["lock"]])
		assert.Equal(t, "2", r[col["ratio_pairs"]], r[col["lock"]])
	}
}

// TestRatioIntervalInWords: with several pairs each ratio has its
// interval, and the legend says how sure it is.
func TestRatioIntervalInWords(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenNoop, "run", "--threads", "1", "--events", "30", "--time", "0",
		"--pairs", "5", "--per-run", "none", "--driver-overhead", "0")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `\n\s+1\s+[0-9,]+\s+[0-9,]+\s+[0-9.]+ \([0-9.]+-[0-9.]+\)\s+[0-9.]+%\n`, stdout)
	assert.Contains(t, stdout, "holds the median with 94% confidence")
	assert.Regexp(t, `(every row's interval lies on one side of 100|not resolved: at 1 thread range/point = )`, stdout)
}

// TestNoOneThreadCost: without a 1-thread run there is no 1-thread line.
func TestNoOneThreadCost(t *testing.T) {
	code, stdout, stderr := cli(t, bench.OpenNoop, "run", "--threads", "2", "--events", "20", "--time", "0", "--per-run", "none", "--driver-overhead", "5ms")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stdout, "at 1 thread")
	assert.Contains(t, stdout, "driver's own time per transaction")
}

// TestThreadsBeyondMachine: a thread count far beyond the machine is
// refused before any run, unless --force-threads insists.
func TestThreadsBeyondMachine(t *testing.T) {
	code, stdout, stderr := cli(t, failOpen(t), "run", "--threads", "1,100000")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "threads 100000: far beyond this machine's")
	assert.Contains(t, stderr, "--force-threads")
	code, _, stderr = cli(t, failOpen(t), "slap", "--concurrency", "100000")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "concurrency 100000: far beyond")
	o, _, err := parseRun([]string{"--threads", "100000", "--force-threads"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{100000}, o.Threads)
}

// TestRunFailure: a failing table is exit 1, not a usage error.
func TestRunFailure(t *testing.T) {
	code, _, stderr := cli(t, func(context.Context, bench.TableConfig) (bench.DB, error) {
		return nil, errors.New("disk on fire")
	}, "run", "--threads", "1", "--events", "1")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "disk on fire")
}

// TestBinaryExitCodes builds lockbench and checks its exit status.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "lockbench")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--workload", "nope"}, 2},
		{[]string{"run", "--threads", "0"}, 2},
		{[]string{"run", "--time", "-1"}, 2},
		{[]string{"run", "--lock", "row"}, 2},
		{[]string{"slap", "--load-type", "x"}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"help"}, 0},
		{[]string{"run", "--threads", "1", "--events", "20", "--time", "0", "--table-size", "100", "--per-run", "none", "--driver-overhead", "0"}, 0},
	} {
		cmd := exec.Command(bin, tc.args...)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, out)
	}

	// Ctrl-C: the binary says it was interrupted and exits 130.
	cmd := exec.Command(bin, "run", "--lock", "point", "--threads", "1", "--time", "30", "--table-size", "100", "--per-run", "none", "--driver-overhead", "0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	time.Sleep(time.Second)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee)
	assert.Equal(t, exitInterrupted, ee.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "lockbench: interrupted after 0 of 2 runs")
	assert.Contains(t, stdout.String(), "interrupted after 0 of 2 runs; the runs that finished:")
}

// TestRunInterrupted: an interrupt prints the runs that finished, in
// each format, says it was interrupted, and exits 130.
func TestRunInterrupted(t *testing.T) {
	for _, format := range []string{"table", "csv"} {
		ctx, cancel := context.WithCancel(context.Background())
		opens := 0
		open := func(ctx context.Context, cfg bench.TableConfig) (bench.DB, error) {
			opens++
			if opens == 3 {
				cancel()
			}
			return bench.OpenNoop(ctx, cfg)
		}
		var stdout, stderr bytes.Buffer
		code := lockbench(ctx, []string{"run", "--threads", "1,2", "--events", "50", "--time", "0", "--per-run", "none", "--format", format}, &stdout, &stderr, open)
		cancel()
		assert.Equal(t, exitInterrupted, code, format)
		assert.Equal(t, "lockbench: interrupted after 2 of 8 runs; what finished follows\n", stderr.String(), format)
		assert.NotContains(t, stderr.String(), "context canceled", format)
		if format == "csv" {
			recs, _ := readCSV(t, stdout.String())
			assert.Len(t, recs, 3, "the header and the two cells at 1 thread")
			continue
		}
		assert.Contains(t, stdout.String(), "interrupted after 2 of 8 runs; the runs that finished:")
		assert.Regexp(t, `\n\s+1\s+[0-9,]+\s+[0-9,]+\s+-\s+0\.0%\n\s+2\s+-\s+-\s+-\s+-\n`, stdout.String())
	}
}
