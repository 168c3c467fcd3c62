package main

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/txnlock/txnlock/bench"
	"github.com/txnlock/txnlock/internal/flagval"
)

// durationValue is a flag that takes a Go duration or bare seconds.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := flagval.Duration(s, time.Second)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// intListValue is a flag that takes "1,2,4".
type intListValue struct{ ns *[]int }

func (v intListValue) String() string {
	if v.ns == nil {
		return ""
	}
	return flagval.Join(*v.ns)
}

func (v intListValue) Set(s string) error {
	ns, err := parseIntList(s)
	if err != nil {
		return err
	}
	*v.ns = ns
	return nil
}

// lockListValue is a flag that takes "point,range".
type lockListValue struct{ ls *[]bench.LockKind }

func (v lockListValue) String() string {
	if v.ls == nil {
		return ""
	}
	return flagval.Join(*v.ls)
}

func (v lockListValue) Set(s string) error {
	*v.ls = parseLockList(s)
	return nil
}

// delayRulesValue is a repeatable flag that takes "DIGEST=DURATION".
type delayRulesValue struct{ rs *[]bench.DelayRule }

func (v delayRulesValue) String() string {
	if v.rs == nil {
		return ""
	}
	parts := make([]string, len(*v.rs))
	for i, r := range *v.rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, " ")
}

func (v delayRulesValue) Set(s string) error {
	r, err := parseDelayRule(s)
	if err != nil {
		return err
	}
	*v.rs = append(*v.rs, r)
	return nil
}

// choiceValue is a string flag restricted to a few values.
type choiceValue struct {
	s       *string
	choices []string
}

func (v choiceValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}

func (v choiceValue) Set(s string) error {
	for _, c := range v.choices {
		if s == c {
			*v.s = s
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(v.choices, ", "))
}

// stringValue adapts a string-kinded type (Workload, Layout, ...) to a
// flag; its Validate checks the value.
type stringValue[T ~string] struct{ p *T }

func (v stringValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v stringValue[T]) Set(s string) error { *v.p = T(s); return nil }

// tableFlags registers the flags of bench.TableOptions, which both
// commands share, with o's values (its defaults) as theirs. sizeUsage
// says what --table-size counts. The random seed (--seed) is read as an
// int64, so that "--seed -1" is reported like any other bad value;
// setSeed, called after parsing, checks it and stores it in o.
func tableFlags(fs *flag.FlagSet, o *bench.TableOptions, sizeUsage string) (setSeed func() error) {
	fs.IntVar(&o.TableSize, "table-size", o.TableSize, sizeUsage)
	fs.Var(stringValue[bench.Layout]{&o.Layout}, "cf-layout", "column families: shared | per-table | per-index")
	fs.Var(stringValue[bench.Storage]{&o.Storage}, "storage", "mem (in-memory Pebble, like /dev/shm) | disk")
	fs.StringVar(&o.Dir, "dir", o.Dir, "parent directory of disk tables (default the system temp dir)")
	fs.BoolVar(&o.Sync, "sync", o.Sync, "commits fsync the WAL (default no fsync, as the RocksDB comparison runs)")
	fs.Var(durationValue{&o.LockTimeout}, "lock-timeout", "lock-wait timeout (Go duration or seconds)")
	seed := int64(o.Seed)
	fs.Int64Var(&seed, "seed", seed, "random seed of the ids and values")
	return func() error {
		if seed < 1 {
			return fmt.Errorf("seed %d: a random seed must be at least 1", seed)
		}
		o.Seed = uint64(seed)
		return nil
	}
}

// throttleFlags registers the flags of bench.ThrottleOptions.
func throttleFlags(fs *flag.FlagSet, o *bench.ThrottleOptions) {
	fs.Var(durationValue{&o.Delay}, "delay", "delay every statement by this much (ProxySQL mysql-default_query_delay; Go duration or seconds)")
	fs.Var(delayRulesValue{&o.DelayRules}, "delay-rule", "DIGEST=DURATION: delay statements with this digest id (0x...) or text (repeatable; bare number = ms)")
	fs.BoolVar(&o.DigestStats, "digest-stats", o.DigestStats, "print per-digest statistics (count, sum/min/max time, rows)")
}

// threadsPerCPU bounds the thread counts a machine is asked for without
// --force-threads: each thread is a goroutine with a transaction, its
// locks and its waits, and far beyond the CPUs they only queue, in
// memory, for the lock manager.
const threadsPerCPU = 500

// maxThreads is the largest thread count run without --force-threads.
func maxThreads() int { return max(1000, threadsPerCPU*runtime.NumCPU()) }

// checkThreads refuses counts above maxThreads unless force is set; name
// is the flag that gave them.
func checkThreads(name string, counts []int, force bool) error {
	if force {
		return nil
	}
	for _, n := range counts {
		if n > maxThreads() {
			return fmt.Errorf("%s %d: far beyond this machine's %d CPUs (at most %d; --force-threads to run it anyway)", name, n, runtime.NumCPU(), maxThreads())
		}
	}
	return nil
}
