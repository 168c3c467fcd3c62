package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/txnlock/txnlock/bench"
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
	d, err := bench.ParseDuration(s)
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
	return bench.JoinInts(*v.ns)
}

func (v intListValue) Set(s string) error {
	ns, err := bench.ParseIntList(s)
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
	return bench.JoinLocks(*v.ls)
}

func (v lockListValue) Set(s string) error {
	*v.ls = bench.ParseLockList(s)
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
	r, err := bench.ParseDelayRule(s)
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

// tableFlags registers the table flags both commands share.
func tableFlags(fs *flag.FlagSet, layout *bench.Layout, storage *bench.Storage, dir *string, sync *bool, lockTimeout *time.Duration) {
	fs.Var(stringValue[bench.Layout]{layout}, "cf-layout", "column families: shared | per-table | per-index")
	fs.Var(stringValue[bench.Storage]{storage}, "storage", "mem (in-memory Pebble, like /dev/shm) | disk")
	fs.StringVar(dir, "dir", "", "parent directory of disk tables (default the system temp dir)")
	fs.BoolVar(sync, "sync", false, "commits fsync the WAL (default NoSync, as the RocksDB anchor)")
	fs.Var(durationValue{lockTimeout}, "lock-timeout", "lock-wait timeout (Go duration or seconds)")
}

// throttleFlags registers the throttling and digest flags.
func throttleFlags(fs *flag.FlagSet, delay *time.Duration, rules *[]bench.DelayRule, digests *bool) {
	fs.Var(durationValue{delay}, "delay", "delay every statement by this much (ProxySQL mysql-default_query_delay; Go duration or seconds)")
	fs.Var(delayRulesValue{rules}, "delay-rule", "DIGEST=DURATION: delay statements with this digest id (0x...) or text (repeatable; bare number = ms)")
	fs.BoolVar(digests, "digest-stats", false, "print per-digest statistics (count, sum/min/max time, rows)")
}
