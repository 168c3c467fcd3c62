package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/txnlock/txnlock/bench"
)

// runFlags are "lockbench run"'s flags beyond bench.Options.
type runFlags struct {
	format       string
	plot         string
	perRun       string
	overhead     time.Duration
	forceThreads bool
}

// String renders f as flags, every one of them, so that the line a run
// prints (with bench.Options.String) reproduces it when pasted into a
// shell.
func (f runFlags) String() string {
	s := fmt.Sprintf("--format=%s --per-run=%s --plot=%s --driver-overhead=%v", f.format, f.perRun, shellQuote(f.plot), f.overhead)
	if f.forceThreads {
		s += " --force-threads"
	}
	return s
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer, open bench.Opener) error {
	o, f, err := parseRun(args, stdout, stderr)
	if err == flag.ErrHelp {
		return nil
	}
	if err != nil {
		return err
	}
	return execRun(ctx, o, f, stdout, stderr, open)
}

// parseRun reads "lockbench run"'s flags and checks every value and the
// plot's path before any run; bad values are usage errors.
func parseRun(args []string, stdout, stderr io.Writer) (bench.Options, runFlags, error) {
	var o bench.Options
	var f runFlags
	c := newCommand("run", `sysbench's OLTP workloads on the sbtest table, each lock kind at each thread count in
mirrored order (point, range, range, point, then range, point, point, range, ...), each run on a
fresh table. The table gives each kind's median QPS and its ratio to the first kind, the median of
the pairs' own ratios; with --pairs 5 or more each ratio comes with an interval that holds its
median with at least 90% confidence.`, stdout, stderr)
	fs := c.fs
	o.EnsureDefaults() // the flags' defaults
	fs.Var(stringValue[bench.Workload]{&o.Workload}, "workload", "oltp_write_only | oltp_update_non_index | oltp_read_write | oltp_point_select")
	fs.Var(lockListValue{&o.Locks}, "lock", "lock kinds to compare, the first is the ratios' baseline: point,range,point-sk,table,none")
	fs.Var(intListValue{&o.Threads}, "threads", "thread counts")
	fs.BoolVar(&f.forceThreads, "force-threads", false, fmt.Sprintf("run thread counts above %d (this machine's limit) anyway", maxThreads()))
	fs.Var(durationValue{&o.Time}, "time", "time per run (Go duration or seconds; 0 = until --events)")
	fs.Int64Var(&o.Events, "events", o.Events, "stop each run after this many events (0 = no limit)")
	fs.IntVar(&o.Tables, "tables", o.Tables, "number of tables")
	fs.BoolVar(&o.NoSK, "no-sk", o.NoSK, "drop the secondary index on k")
	setSeed := tableFlags(fs, &o.TableOptions, "rows per table")
	fs.Var(durationValue{&o.ReportInterval}, "report-interval", "print intermediate reports this often (Go duration or seconds; 0 = none)")
	fs.IntVar(&o.Pairs, "pairs", o.Pairs, "mirrored pairs per thread count (each lock kind runs 2*pairs times; 5 or more give each ratio a 90% interval)")
	throttleFlags(fs, &o.ThrottleOptions)
	f.format = "table"
	fs.Var(choiceValue{&f.format, []string{"table", "csv", "json"}}, "format", "output: table | csv | json (csv and json print nothing else on stdout)")
	fs.StringVar(&f.plot, "plot", "", "write QPS and the ratios against threads to this file (.png, .svg, .pdf)")
	f.perRun = "full"
	fs.Var(choiceValue{&f.perRun, []string{"full", "line", "none"}}, "per-run", "per-run report: full (sysbench's) | line | none")
	f.overhead = 300 * time.Millisecond
	fs.Var(durationValue{&f.overhead}, "driver-overhead", "measure the driver's own cost per transaction for this long (0 = skip)")
	if err := c.parse(args); err != nil {
		return o, f, err
	}
	if err := setSeed(); err != nil {
		return o, f, usageErr(stderr, "run", err)
	}
	if f.overhead < 0 {
		return o, f, usageErr(stderr, "run", fmt.Errorf("driver-overhead %v is negative", f.overhead))
	}
	if err := o.Validate(); err != nil {
		return o, f, usageErr(stderr, "run", err)
	}
	if err := checkThreads("threads", o.Threads, f.forceThreads); err != nil {
		return o, f, usageErr(stderr, "run", err)
	}
	if f.plot != "" {
		if err := checkPlotPath(f.plot); err != nil {
			return o, f, usageErr(stderr, "run", err)
		}
	}
	return o, f, nil
}

// execRun runs the plan and prints it.
func execRun(ctx context.Context, o bench.Options, f runFlags, stdout, stderr io.Writer, open bench.Opener) error {
	// Where each kind of output goes: with csv or json, stdout carries
	// only the data.
	reports := stdout
	if f.format != "table" {
		reports = stderr
	}
	obs := &runObserver{perRun: f.perRun, out: reports}
	runs := len(o.Threads) * len(o.Locks) * 2 * o.Pairs
	switch {
	case time.Duration(runs)*o.Time < progressMin:
	case isTerminal(stderr):
		obs.line = newProgress(stderr, o.Time)
	default:
		obs.line = newProgressLines(stderr, o.Time, progressEvery)
	}
	if f.format == "table" {
		fmt.Fprintf(stdout, "lockbench run %s %s\n\n", o, f)
	}
	res, err := bench.RunPlan(ctx, open, o, obs, reports)
	if obs.line != nil {
		obs.line.clear()
	}
	if err != nil && (ctx.Err() == nil || res == nil) {
		return err
	}
	interrupted := err != nil
	if interrupted {
		fmt.Fprintf(stderr, "lockbench: interrupted after %d of %d runs; what finished follows\n", len(res.Runs), runs)
		if f.format == "table" {
			fmt.Fprintf(stdout, "\ninterrupted after %d of %d runs; the runs that finished:\n", len(res.Runs), runs)
		}
	} else if f.overhead > 0 {
		res.DriverOverhead, err = bench.MeasureDriverOverhead(ctx, o.Workload, o.TableSize, f.overhead)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if interrupted = err != nil; interrupted {
			fmt.Fprintf(stderr, "lockbench: interrupted after all %d runs, while measuring the driver's own cost\n", runs)
		}
	}
	if err := writeResult(stdout, res, f); err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	if f.plot != "" {
		if err := writePlot(f.plot, res); err != nil {
			return err
		}
		fmt.Fprintf(reports, "wrote %s\n", f.plot)
	}
	return nil
}

// writeResult prints res in f's format.
func writeResult(stdout io.Writer, res *bench.Result, f runFlags) error {
	switch f.format {
	case "csv":
		return res.WriteCSV(stdout)
	case "json":
		return res.WriteJSON(stdout)
	}
	if f.perRun != "none" {
		fmt.Fprintln(stdout)
	}
	res.WriteComparison(stdout)
	return nil
}

// runObserver prints each run's report and drives the progress line.
type runObserver struct {
	perRun string
	out    io.Writer
	line   *progress // nil: no progress line
}

func (r *runObserver) RunStart(seq, total int, lock bench.LockKind, threads int) {
	if r.line != nil {
		r.line.RunStart(seq, total, lock, threads)
	}
}

func (r *runObserver) RunProgress(frac float64) {
	if r.line != nil {
		r.line.RunProgress(frac)
	}
}

func (r *runObserver) RunDone(res *bench.RunResult) {
	if r.line != nil && r.perRun != "none" {
		r.line.clear()
	}
	switch r.perRun {
	case "full":
		res.WriteReport(r.out)
	case "line":
		res.WriteLine(r.out)
	}
	if r.line != nil {
		r.line.RunDone(res)
	}
}
