package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/txnlock/txnlock/bench"
)

// runFlags are "lockbench run"'s flags beyond bench.Options.
type runFlags struct {
	format   string
	plot     string
	perRun   string
	overhead time.Duration
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer, open bench.Opener) error {
	o, f, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	return execRun(ctx, o, f, stdout, stderr, open)
}

// parseRun reads "lockbench run"'s flags; bad values are usage errors.
func parseRun(args []string, stderr io.Writer) (bench.Options, runFlags, error) {
	var o bench.Options
	var f runFlags
	fs := newFlagSet("run", stderr, `sysbench's OLTP workloads on the sbtest table, each lock kind at each thread count in
mirrored order (point, range, range, point, then range, point, point, range, ...), each run on a
fresh table.`)
	o.EnsureDefaults() // the flags' defaults
	fs.Var(stringValue[bench.Workload]{&o.Workload}, "workload", "oltp_write_only | oltp_update_non_index | oltp_read_write | oltp_point_select")
	fs.Var(lockListValue{&o.Locks}, "lock", "lock kinds to compare, the first is the ratios' baseline: point,range,point-sk,table,none")
	fs.Var(intListValue{&o.Threads}, "threads", "thread counts")
	fs.Var(durationValue{&o.Time}, "time", "time per run (Go duration or seconds; 0 = until --events)")
	fs.Int64Var(&o.Events, "events", o.Events, "stop each run after this many events (0 = no limit)")
	fs.IntVar(&o.Tables, "tables", o.Tables, "number of tables")
	fs.BoolVar(&o.NoSK, "no-sk", o.NoSK, "drop the secondary index on k")
	setSeed := tableFlags(fs, &o.TableOptions, "rows per table")
	fs.Var(durationValue{&o.ReportInterval}, "report-interval", "print intermediate reports this often (Go duration or seconds; 0 = none)")
	fs.IntVar(&o.Pairs, "pairs", o.Pairs, "mirrored pairs per thread count (each lock kind runs 2*pairs times)")
	throttleFlags(fs, &o.ThrottleOptions)
	f.format = "table"
	fs.Var(choiceValue{&f.format, []string{"table", "csv", "json"}}, "format", "output: table | csv | json (csv and json print nothing else on stdout)")
	fs.StringVar(&f.plot, "plot", "", "write QPS against threads, one line per lock kind, to this file (.png, .svg, .pdf)")
	f.perRun = "full"
	fs.Var(choiceValue{&f.perRun, []string{"full", "line", "none"}}, "per-run", "per-run report: full (sysbench's) | line | none")
	f.overhead = 300 * time.Millisecond
	fs.Var(durationValue{&f.overhead}, "driver-overhead", "measure the driver's own cost per transaction for this long (0 = skip)")
	if err := parse(fs, args); err != nil {
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
	total := time.Duration(len(o.Threads)*len(o.Locks)*2*o.Pairs) * o.Time
	if isTerminal(stderr) && total >= progressMin {
		obs.bar = bench.NewProgress(stderr)
	}
	if f.format == "table" {
		fmt.Fprintf(stdout, "lockbench run %s\n\n", o)
	}
	res, err := bench.RunPlan(ctx, open, o, obs, reports)
	if obs.bar != nil {
		obs.bar.Clear()
	}
	if err != nil {
		if ctx.Err() != nil && res != nil && len(res.Cells) > 0 && f.format == "table" {
			fmt.Fprintf(stdout, "\ninterrupted; the runs that finished:\n")
			bench.WriteComparison(stdout, res)
		}
		return err
	}
	if f.overhead > 0 {
		if res.DriverOverhead, err = bench.MeasureDriverOverhead(ctx, o.Workload, o.TableSize, f.overhead); err != nil {
			return err
		}
	}
	switch f.format {
	case "csv":
		err = bench.WriteCSV(stdout, res.Cells)
	case "json":
		err = bench.WriteJSON(stdout, res)
	default:
		if f.perRun != "none" {
			fmt.Fprintln(stdout)
		}
		bench.WriteComparison(stdout, res)
	}
	if err != nil {
		return err
	}
	if f.plot != "" {
		if err := bench.WritePlot(f.plot, res); err != nil {
			return err
		}
		fmt.Fprintf(reports, "wrote %s\n", f.plot)
	}
	return nil
}

// runObserver prints each run's report and drives the progress bar.
type runObserver struct {
	perRun string
	out    io.Writer
	bar    *bench.Progress // nil: no bar
}

func (r *runObserver) RunStart(seq, total int, lock bench.LockKind, threads int) {
	if r.bar != nil {
		r.bar.RunStart(seq, total, lock, threads)
	}
}

func (r *runObserver) RunProgress(frac float64) {
	if r.bar != nil {
		r.bar.RunProgress(frac)
	}
}

func (r *runObserver) RunDone(res *bench.RunResult) {
	if r.bar != nil && r.perRun != "none" {
		r.bar.Clear()
	}
	switch r.perRun {
	case "full":
		bench.WriteRunReport(r.out, res)
	case "line":
		bench.WriteRunLine(r.out, res)
		if len(res.Digests) > 0 {
			bench.WriteDigestStats(r.out, res.Digests)
		}
	}
	if r.bar != nil {
		r.bar.RunDone(res)
	}
}
