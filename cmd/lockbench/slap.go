package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/txnlock/txnlock/bench"
)

func slapCmd(ctx context.Context, args []string, stdout, stderr io.Writer, open bench.Opener) error {
	var o bench.SlapOptions
	c := newCommand("slap", `mysqlslap's analog: for each lock kind and concurrency, --iterations times, a fresh table
and N clients running --number-of-queries/N autocommit statements. Deadlock victims and
timed-out statements are retried, as an application would.`, stdout, stderr)
	fs := c.fs
	o.EnsureDefaults() // the flags' defaults
	fs.Var(intListValue{&o.Concurrency}, "concurrency", "client counts (mysqlslap -c)")
	var forceThreads bool
	fs.BoolVar(&forceThreads, "force-threads", false, fmt.Sprintf("run client counts above %d (this machine's limit) anyway", maxThreads()))
	fs.IntVar(&o.Iterations, "iterations", o.Iterations, "iterations per lock kind and concurrency (mysqlslap -i)")
	fs.Var(lockListValue{&o.Locks}, "lock", "lock kinds, as mysqlslap's engines: none=blackhole, table=MyISAM, point=InnoDB; and range")
	fs.Var(stringValue[bench.LoadType]{&o.LoadType}, "load-type", "mixed | update | write | key | read (mysqlslap --auto-generate-sql-load-type)")
	fs.IntVar(&o.AutoIncMode, "autoinc-mode", o.AutoIncMode, "innodb_autoinc_lock_mode: 0 table AUTO-INC lock to end of statement, 1 consecutive, 2 interleaved")
	fs.IntVar(&o.NumberOfQueries, "number-of-queries", o.NumberOfQueries, "total statements, split across the clients")
	setSeed := tableFlags(fs, &o.TableOptions, "rows loaded before the clients start")
	throttleFlags(fs, &o.ThrottleOptions)
	format := "table"
	fs.Var(choiceValue{&format, []string{"table", "csv", "json"}}, "format", "output: table | csv | json")
	if err := c.parse(args); err == flag.ErrHelp {
		return nil
	} else if err != nil {
		return err
	}
	if err := setSeed(); err != nil {
		return usageErr(stderr, "slap", err)
	}
	if err := o.Validate(); err != nil {
		return usageErr(stderr, "slap", err)
	}
	if err := checkThreads("concurrency", o.Concurrency, forceThreads); err != nil {
		return usageErr(stderr, "slap", err)
	}
	if format == "table" {
		fmt.Fprintf(stdout, "lockbench slap %s\n\n", o)
	}
	var progress func(bench.LockKind, int)
	if isTerminal(stderr) {
		progress = func(l bench.LockKind, c int) {
			fmt.Fprintf(stderr, "\r\033[Kslap: lock %s, %d clients, %d iterations...", l, c, o.Iterations)
		}
	}
	rs, err := bench.RunSlap(ctx, open, o, progress)
	if progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	interrupted := err != nil && ctx.Err() != nil
	if interrupted {
		fmt.Fprintf(stderr, "lockbench slap: interrupted after %d of %d cells; what finished follows\n", len(rs), len(o.Locks)*len(o.Concurrency))
	} else if err != nil {
		return err
	}
	if err := writeSlap(stdout, o, rs, format); err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	return nil
}

// writeSlap prints the slap's results in format.
func writeSlap(stdout io.Writer, o bench.SlapOptions, rs []*bench.SlapResult, format string) error {
	switch format {
	case "csv":
		return writeSlapCSV(stdout, rs)
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"options": o.String(), "results": rs})
	}
	bench.WriteSlapReport(stdout, rs)
	return nil
}

func writeSlapCSV(w io.Writer, rs []*bench.SlapResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"lock", "clients", "iterations", "queries_per_client", "avg_s", "min_s", "max_s",
		"deadlocks", "breaker_trips", "deferred_searches", "assumed_deadlocks", "timeouts", "retries", "rows_expected", "rows_found", "duplicate_ids", "check_ok"})
	for _, r := range rs {
		s := func(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }
		u := func(n uint64) string { return strconv.FormatUint(n, 10) }
		cw.Write([]string{string(r.Lock), strconv.Itoa(r.Concurrency), strconv.Itoa(r.Iterations), strconv.Itoa(r.QueriesPerClient),
			s(r.Avg.Seconds()), s(r.Min.Seconds()), s(r.Max.Seconds()),
			u(r.Deadlocks), u(r.Trips), u(r.Deferred), u(r.Assumed), u(r.Timeouts), u(r.Retries),
			strconv.FormatInt(r.RowsExpected, 10), strconv.FormatInt(r.RowsFound, 10), strconv.FormatInt(r.DuplicateIDs, 10),
			strconv.FormatBool(r.CheckOK())})
	}
	cw.Flush()
	return cw.Error()
}
