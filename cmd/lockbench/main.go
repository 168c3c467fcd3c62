// Command lockbench compares txnlock's point and range lock managers on
// sysbench's sbtest table stored in Pebble (bench/sbtest).
//
//	lockbench                 the main comparison: oltp_write_only, point vs
//	                          range, threads 1..100, in-memory Pebble, five
//	                          mirrored pairs of 1 s runs per thread count;
//	                          prints the table, writes lockbench.png
//	lockbench [flags]         the main comparison with some of its settings
//	                          changed: its defaults, then the flags
//	lockbench run [flags]     sysbench's analog (lockbench run -h), with
//	                          sysbench's defaults (10 s runs, one pair,
//	                          each run's report, no plot)
//	lockbench slap [flags]    mysqlslap's analog (lockbench slap -h)
//
// Exit status: 0 on success, 2 on a usage error (unknown flag or bad
// value), 1 when a run fails, 130 when interrupted (Ctrl-C).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
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
	exitOK          = 0
	exitFail        = 1
	exitUsage       = 2
	exitInterrupted = 130 // as a shell reports a command ended by SIGINT
)

var (
	// errUsage marks errors that are the caller's (exit 2); they have been
	// printed.
	errUsage = errors.New("usage")
	// errInterrupted marks a plan cut short by its context (Ctrl-C); what
	// finished has been printed.
	errInterrupted = errors.New("interrupted")
)

const usage = `usage: lockbench [run|slap|help] [flags]

  lockbench            the main comparison: oltp_write_only, point vs range, threads
                       1,2,4,...,100, in-memory Pebble, five mirrored pairs of 1 s runs per
                       thread count (about three minutes on 2 cores); prints the table with
                       each ratio's interval and writes lockbench.png
                       (= lockbench run --time 1 --pairs 5 --per-run none --plot lockbench.png)
  lockbench --flag...  the main comparison with some settings changed: the same as
                       lockbench run --time 1 --pairs 5 --per-run none --plot lockbench.png --flag...
                       (so "lockbench --threads 1,2" keeps 1 s runs, five pairs and the plot;
                       --plot= draws none)
  lockbench run        sysbench's analog: workloads, lock kinds, thread ramps, mirrored pairs,
                       with sysbench's defaults (10 s runs, one pair, each run's report, no plot)
  lockbench slap       mysqlslap's analog: client sessions, iterations, lock kinds, auto-increment
  lockbench help       this text; "lockbench run -h" and "lockbench slap -h" list the flags
`

// mainJob is what lockbench does without arguments: oltp_write_only,
// point vs range at 1..100 threads in memory, five mirrored pairs of 1 s
// runs per thread count (160 runs), so that every ratio has an interval
// that holds its median with 94% confidence.
var mainJob = []string{"--time=1", "--pairs=5", "--per-run=none", "--plot=lockbench.png"}

// lockbench runs the command with args and returns the exit code.
func lockbench(ctx context.Context, args []string, stdout, stderr io.Writer, open bench.Opener) int {
	var err error
	switch {
	case len(args) == 0:
		err = runCmd(ctx, mainJob, stdout, stderr, open)
	case args[0] == "help" || isHelpFlag(args[0]):
		fmt.Fprint(stdout, usage)
		return exitOK
	case args[0] == "run":
		err = runCmd(ctx, args[1:], stdout, stderr, open)
	case args[0] == "slap":
		err = slapCmd(ctx, args[1:], stdout, stderr, open)
	case strings.HasPrefix(args[0], "-"):
		// The main comparison with changes: its defaults, then the flags.
		err = runCmd(ctx, append(slices.Clone(mainJob), args...), stdout, stderr, open)
	default:
		fmt.Fprintf(stderr, "lockbench: unknown command %q\n%s", args[0], helpPointer(""))
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "lockbench: %v\n", err)
	return exitFail
}

func isHelpFlag(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

// helpPointer is the line after a usage error: where the flags are told.
func helpPointer(cmd string) string {
	if cmd == "" {
		return `run "lockbench help" for the commands` + "\n"
	}
	return fmt.Sprintf("run \"lockbench %s -h\" for its flags\n", cmd)
}

// usageErr prints err on one line and the pointer to -h, and marks it as
// a usage error.
func usageErr(stderr io.Writer, cmd string, err error) error {
	fmt.Fprintf(stderr, "lockbench %s: %v\n%s", cmd, err, helpPointer(cmd))
	return fmt.Errorf("%w: %v", errUsage, err)
}

// command is a subcommand's flag set and the text its help starts with.
type command struct {
	fs     *flag.FlagSet
	about  string
	stdout io.Writer
	stderr io.Writer
}

// newCommand returns command name's flag set. The flag package prints
// nothing: help goes to stdout, errors to stderr (parse).
func newCommand(name, about string, stdout, stderr io.Writer) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{fs: fs, about: about, stdout: stdout, stderr: stderr}
}

// help prints the command's help on stdout.
func (c *command) help() {
	fmt.Fprintf(c.stdout, "usage: lockbench %s [flags]\n\n%s\n\nflags:\n", c.fs.Name(), c.about)
	c.fs.SetOutput(c.stdout)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
}

// parse parses args: "help", -h and --help print the help and return
// flag.ErrHelp; a bad flag or argument is a usage error printed on one
// line with the pointer to -h.
func (c *command) parse(args []string) error {
	if len(args) > 0 && args[0] == "help" {
		c.help()
		return flag.ErrHelp
	}
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help()
			return err
		}
		return usageErr(c.stderr, c.fs.Name(), err)
	}
	if c.fs.NArg() > 0 {
		return usageErr(c.stderr, c.fs.Name(), fmt.Errorf("unexpected argument %q", c.fs.Arg(0)))
	}
	return nil
}

// isTerminal reports whether w is a terminal (for the progress line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressMin is the shortest plan that gets a progress line.
const progressMin = 3 * time.Second
