// Command lockbench reproduces the seeds' benchmarks against sysbench's
// sbtest table on Pebble (bench/sbtest), comparing txnlock's point and
// range lock managers.
//
//	lockbench                 the main job: oltp_write_only, point vs range,
//	                          threads 1..100, in-memory Pebble, 3 s per run;
//	                          prints the comparison table, writes lockbench.png
//	lockbench run [flags]     sysbench's analog (lockbench run -h)
//	lockbench slap [flags]    mysqlslap's analog (lockbench slap -h)
//
// Exit status: 0 on success, 2 on a usage error (unknown flag or bad
// value), 1 when a run fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"golang.org/x/term"

	"github.com/txnlock/txnlock/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(lockbench(ctx, os.Args[1:], os.Stdout, os.Stderr, bench.OpenSBTest))
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks errors that are the caller's (exit 2).
var errUsage = errors.New("usage")

const usage = `usage: lockbench [run|slap|help] [flags]

  lockbench            the main job: oltp_write_only, point vs range, threads 1,2,4,...,100,
                       in-memory Pebble, 3 s per run (about two minutes on 2 cores); prints
                       the comparison table and writes lockbench.png
                       (= lockbench run --time 3 --per-run line --plot lockbench.png)
  lockbench run        sysbench's analog: workloads, lock kinds, thread ramps, mirrored pairs
  lockbench slap       mysqlslap's analog: sessions, iterations, lock kinds, auto-increment
  lockbench help       this text; "lockbench run -h" and "lockbench slap -h" list the flags
`

// mainJob is what lockbench does without arguments: the seed's
// comparison, oltp_write_only point vs range at 1..100 threads in memory,
// one mirrored pair of 3 s runs per thread count (32 runs: about two
// minutes on 2 cores).
var mainJob = []string{"--time=3", "--per-run=line", "--plot=lockbench.png"}

// lockbench runs the command with args and returns the exit code.
func lockbench(ctx context.Context, args []string, stdout, stderr io.Writer, open bench.Opener) int {
	var err error
	switch {
	case len(args) == 0:
		err = runCmd(ctx, mainJob, stdout, stderr, open)
	case args[0] == "run":
		err = runCmd(ctx, args[1:], stdout, stderr, open)
	case args[0] == "slap":
		err = slapCmd(ctx, args[1:], stdout, stderr, open)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "lockbench: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	}
	fmt.Fprintf(stderr, "lockbench: %v\n", err)
	return exitFail
}

// usageErr prints err and marks it as a usage error.
func usageErr(stderr io.Writer, cmd string, err error) error {
	fmt.Fprintf(stderr, "lockbench %s: %v\n", cmd, err)
	return fmt.Errorf("%w: %v", errUsage, err)
}

// newFlagSet is command cmd's flag set: errors and -h go to stderr, -h
// prints about and the flags.
func newFlagSet(cmd string, stderr io.Writer, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lockbench %s [flags]\n\n%s\n\nflags:\n", cmd, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses fs and turns a bad flag into a usage error (the flag
// package has printed it with the flag list).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "lockbench %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressMin is the shortest plan that gets a progress bar.
const progressMin = 3 * time.Second
