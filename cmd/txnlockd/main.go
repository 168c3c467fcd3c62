// Command txnlockd is a MySQL-protocol server whose tables live on Pebble
// and whose rows are locked by txnlock's lock managers, so that unmodified
// MySQL clients (sysbench, mysqlslap, the mariadb shell, any driver) drive
// them.
//
//	cd cmd/txnlockd && go run . --lock range --allow-empty-root
//	mariadb -h127.0.0.1 -P3306 -uroot
//
// Flags choose the lock kind (point, range, point-sk, as lockbench's), the
// column-family layout, innodb_autoinc_lock_mode, the lock-wait timeout,
// the storage (memory, or a directory that survives restarts), the listen
// address (loopback by default), the users, the deadlock detector's
// options and per-digest delay rules. See the server package for what SQL
// it runs and how it locks.
package main

import (
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"github.com/txnlock/txnlock/cmd/txnlockd/server"
	"github.com/txnlock/txnlock/deadlock"
)

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "txnlockd:", err)
		os.Exit(2)
	}
	if *pprofAddr != "" {
		go func() { fmt.Fprintln(os.Stderr, "txnlockd: pprof:", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	srv, err := server.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "txnlockd:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "txnlockd: listening on %s (%v)\n", srv.Addr(), opts.Engine)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		srv.Close()
	}()
	srv.Serve()
	srv.Close()
}

// pprofAddr serves net/http/pprof when set (--pprof).
var pprofAddr = new(string)

// listValue collects a repeatable flag.
type listValue []string

func (l *listValue) String() string     { return strings.Join(*l, ",") }
func (l *listValue) Set(s string) error { *l = append(*l, s); return nil }

func parseFlags(args []string) (server.Options, error) {
	var o server.Options
	fs := flag.NewFlagSet("txnlockd", flag.ContinueOnError)
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:3306", "TCP listen address")
	lock := fs.String("lock", "point", "lock kind: point | range | point-sk (as lockbench's)")
	layout := fs.String("cf-layout", "shared", "column families: shared | per-table | per-index")
	fs.IntVar(&o.Engine.AutoIncMode, "autoinc-mode", 0, "innodb_autoinc_lock_mode: 0 AUTO-INC lock to the end of the statement, 1 consecutive, 2 interleaved")
	fs.DurationVar(&o.Engine.LockTimeout, "lock-wait-timeout", engine.DefaultLockTimeout, "default innodb_lock_wait_timeout")
	fs.StringVar(&o.Engine.Dir, "dir", "", "Pebble directory; empty keeps everything in memory")
	fs.BoolVar(&o.Engine.Sync, "sync", false, "commits fsync the WAL (the WAL is always written)")
	fs.StringVar(pprofAddr, "pprof", "", "serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060")
	var users, rules listValue
	fs.Var(&users, "user", "USER:PASSWORD, mysql_native_password (repeatable)")
	fs.BoolVar(&o.AllowEmptyRoot, "allow-empty-root", false, "let root connect without a password")
	fs.Var(&rules, "delay-rule", "DIGEST=DURATION: delay statements of this digest id (0x...) or text (repeatable; bare number = ms)")
	det := &o.Engine.Detector
	detection := fs.String("deadlock-detection", "on-block", "when cycles are searched: on-block | background | off")
	victim := fs.String("deadlock-victim", "requester", "which transaction of a cycle fails: requester | youngest | fewest-locks | priority")
	breaker := fs.String("deadlock-breaker", "defer", "what a search cut short by a limit decides (see package deadlock)")
	fs.IntVar(&det.MaxDepth, "deadlock-max-depth", deadlock.DefaultMaxDepth, "longest path a search follows")
	fs.IntVar(&det.MaxSteps, "deadlock-max-steps", deadlock.DefaultMaxSteps, "most edges a search follows")
	fs.DurationVar(&det.MaxSearchTime, "deadlock-max-search-time", deadlock.DefaultMaxSearchTime, "longest time a search runs")
	fs.DurationVar(&det.DetectDelay, "deadlock-detect-delay", 0, "how long a wait lasts before the detector hears of it")
	fs.DurationVar(&det.BackgroundInterval, "deadlock-background-interval", deadlock.DefaultBackgroundInterval, "period of the background search")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.Engine.Lock, o.Engine.Layout = engine.LockKind(*lock), engine.Layout(*layout)
	var err error
	if det.Detection, err = pick[deadlock.Detection](*detection, 3); err != nil {
		return o, err
	}
	if det.Victim, err = pick[deadlock.Victim](*victim, 4); err != nil {
		return o, err
	}
	if det.Breaker, err = pick[deadlock.Breaker](*breaker, 4); err != nil {
		return o, err
	}
	o.Users = map[string]string{}
	for _, u := range users {
		name, pw, ok := strings.Cut(u, ":")
		if !ok || name == "" {
			return o, fmt.Errorf("--user %q: want USER:PASSWORD", u)
		}
		o.Users[name] = pw
	}
	for _, r := range rules {
		rule, err := parseDelayRule(r)
		if err != nil {
			return o, err
		}
		o.DelayRules = append(o.DelayRules, rule)
	}
	return o, nil
}

// pick finds the value of an enum whose String is s among its first n.
func pick[T interface {
	~uint8
	String() string
}](s string, n int) (T, error) {
	var names []string
	for i := range n {
		if T(i).String() == s {
			return T(i), nil
		}
		names = append(names, T(i).String())
	}
	return 0, fmt.Errorf("%q is not one of %s", s, strings.Join(names, ", "))
}

// parseDelayRule reads "DIGEST=DURATION"; the digest text itself contains
// '=', so the duration is what follows the last one. A bare number is
// milliseconds, as ProxySQL's delay column is.
func parseDelayRule(s string) (server.DelayRule, error) {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 {
		return server.DelayRule{}, fmt.Errorf("delay rule %q: want DIGEST=DURATION", s)
	}
	v := strings.TrimSpace(s[i+1:])
	d, err := time.ParseDuration(v)
	if err != nil {
		var ms int64
		if _, serr := fmt.Sscanf(v, "%d", &ms); serr != nil || fmt.Sprint(ms) != v {
			return server.DelayRule{}, fmt.Errorf("delay rule %q: %q is not a duration", s, v)
		}
		d = time.Duration(ms) * time.Millisecond
	}
	return server.DelayRule{Digest: strings.TrimSpace(s[:i]), Delay: d}, nil
}
