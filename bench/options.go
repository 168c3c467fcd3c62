package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/bench/sbtest"
	"github.com/txnlock/txnlock/internal/flagval"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// Defaults of Options.
const (
	DefaultTime        = 10 * time.Second        // sysbench's --time
	DefaultTableSize   = sbtest.DefaultTableSize // sysbench's 10000
	DefaultTables      = sbtest.DefaultTables
	DefaultPairs       = 1
	DefaultLockTimeout = txnlock.DefaultLockTimeout
	DefaultSeed        = 1
)

// defaultThreads is the thread ramp of MyRocks' published comparison.
var defaultThreads = []int{1, 2, 4, 8, 16, 32, 64, 100}

// defaultLocks compares the two managers.
var defaultLocks = []LockKind{LockPoint, LockRange}

// Options configure a plan of runs: every lock kind at every thread
// count, in mirrored pairs (see the package doc). The names follow sysbench's.
type Options struct {
	// Workload is the statement mix. Default: OLTPWriteOnly.
	Workload Workload
	// Locks are the lock kinds compared; the first is the baseline of the
	// comparison table's ratios. Default: point, range.
	Locks []LockKind
	// Threads are the thread counts. Default: 1, 2, 4, 8, 16, 32, 64, 100
	// (the thread ramp of MyRocks' published comparison).
	Threads []int
	// Time is each run's duration. Default: DefaultTime (10s), unless
	// Events is set, in which case 0 means no time limit.
	Time time.Duration
	// Events stops each run after this many transactions (sysbench's
	// --events; failed ones count). Default: 0, no limit.
	Events int64
	// Tables is the number of tables. Default: DefaultTables (1).
	Tables int
	// NoSK drops the secondary index on k. Default: false.
	NoSK bool
	// TableOptions: the table size, layout, storage, lock-wait timeout
	// and random seed. Defaults: TableOptions's.
	TableOptions
	// Pairs is the number of mirrored blocks per thread count: each lock
	// kind runs 2*Pairs times. Default: DefaultPairs (1).
	Pairs int
	// ReportInterval prints intermediate reports this often. Default: 0 (none).
	ReportInterval time.Duration
	// ThrottleOptions: statement delays and digest statistics. Default:
	// none.
	ThrottleOptions
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Workload == "" {
		o.Workload = OLTPWriteOnly
	}
	if len(o.Locks) == 0 {
		o.Locks = append([]LockKind(nil), defaultLocks...)
	}
	if len(o.Threads) == 0 {
		o.Threads = append([]int(nil), defaultThreads...)
	}
	if o.Time == 0 && o.Events == 0 {
		o.Time = DefaultTime
	}
	if o.Tables == 0 {
		o.Tables = DefaultTables
	}
	o.TableOptions.EnsureDefaults()
	if o.Pairs == 0 {
		o.Pairs = DefaultPairs
	}
}

// Validate reports every problem.
func (o *Options) Validate() error {
	var p optcheck.Problems
	if !o.Workload.Valid() {
		p.Addf("unknown workload %q (want one of %s)", o.Workload, flagval.Join(workloads))
	}
	validateLocks(&p, o.Locks)
	validateCounts(&p, "threads", o.Threads)
	if o.Time < 0 {
		p.Addf("time %v is negative", o.Time)
	}
	if o.Events < 0 {
		p.Addf("events %d is negative", o.Events)
	}
	if o.Time == 0 && o.Events == 0 {
		p.Addf("time and events are both 0: a run would never end")
	}
	if o.Tables < 1 {
		p.Addf("tables %d: must be at least 1", o.Tables)
	}
	o.TableOptions.check(&p)
	if o.Pairs < 1 {
		p.Addf("pairs %d: must be at least 1", o.Pairs)
	}
	if o.ReportInterval < 0 {
		p.Addf("report-interval %v is negative", o.ReportInterval)
	}
	o.ThrottleOptions.check(&p, o.Tables)
	return p.Err()
}

// String renders the options as the command line that repeats them.
func (o Options) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "--workload=%s --lock=%s --threads=%s --time=%v --events=%d --table-size=%d --tables=%d --cf-layout=%s --storage=%s",
		o.Workload, flagval.Join(o.Locks), flagval.Join(o.Threads), o.Time, o.Events, o.TableSize, o.Tables, o.Layout, o.Storage)
	if o.Dir != "" {
		fmt.Fprintf(&sb, " --dir=%s", o.Dir)
	}
	fmt.Fprintf(&sb, " --sync=%t --no-sk=%t --lock-timeout=%v --pairs=%d --seed=%d", o.Sync, o.NoSK, o.LockTimeout, o.Pairs, o.Seed)
	if o.ReportInterval > 0 {
		fmt.Fprintf(&sb, " --report-interval=%v", o.ReportInterval)
	}
	o.ThrottleOptions.writeFlags(&sb)
	return sb.String()
}

// tableConfig is the table of one run with lock kind l.
func (o *Options) tableConfig(l LockKind) TableConfig {
	cfg := o.TableOptions.tableConfig(l)
	cfg.Tables, cfg.NoSK, cfg.AutoIncMode = o.Tables, o.NoSK, 1
	return cfg
}
