package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
)

// Defaults of Options.
const (
	DefaultTime        = 10 * time.Second // sysbench's --time
	DefaultTableSize   = 10000
	DefaultTables      = 1
	DefaultPairs       = 1
	DefaultLockTimeout = txnlock.DefaultLockTimeout
	DefaultSeed        = 1
)

// DefaultThreads is the seed's thread ramp.
var DefaultThreads = []int{1, 2, 4, 8, 16, 32, 64, 100}

// DefaultLocks compares the two managers.
var DefaultLocks = []LockKind{LockPoint, LockRange}

// Options configure a plan of runs: every lock kind at every thread
// count, in mirrored pairs (see Order). The names follow sysbench's.
type Options struct {
	// Workload is the statement mix. Default: OLTPWriteOnly.
	Workload Workload
	// Locks are the lock kinds compared; the first is the baseline of the
	// comparison table's ratios. Default: DefaultLocks (point, range).
	Locks []LockKind
	// Threads are the thread counts. Default: DefaultThreads (1..100).
	Threads []int
	// Time is each run's duration. Default: DefaultTime (10s), unless
	// Events is set, in which case 0 means no time limit.
	Time time.Duration
	// Events stops each run after this many transactions (sysbench's
	// --events; failed ones count). Default: 0, no limit.
	Events int64
	// TableSize is the rows per table. Default: DefaultTableSize (10000).
	TableSize int
	// Tables is the number of tables. Default: DefaultTables (1).
	Tables int
	// Layout maps tables and indexes to column families. Default:
	// LayoutShared.
	Layout Layout
	// Storage is where the table lives. Default: StorageMem.
	Storage Storage
	// Dir is the parent directory of disk tables. Default: "" (os.TempDir()).
	Dir string
	// Sync makes commits fsync the WAL. Default: false (NoSync, as the
	// RocksDB anchor runs).
	Sync bool
	// NoSK drops the secondary index on k. Default: false.
	NoSK bool
	// LockTimeout is the lock-wait timeout. Default: DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// Pairs is the number of mirrored blocks per thread count: each lock
	// kind runs 2*Pairs times. Default: DefaultPairs (1).
	Pairs int
	// ReportInterval prints intermediate reports this often. Default: 0 (none).
	ReportInterval time.Duration
	// Delay delays every statement (ProxySQL's mysql-default_query_delay).
	// Default: 0.
	Delay time.Duration
	// DelayRules delay the statements of one digest each. Default: none.
	DelayRules []DelayRule
	// DigestStats collects per-digest statistics. Default: false.
	DigestStats bool
	// Seed seeds the random ids and values. Default: DefaultSeed (1).
	Seed uint64
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Workload == "" {
		o.Workload = OLTPWriteOnly
	}
	if len(o.Locks) == 0 {
		o.Locks = append([]LockKind(nil), DefaultLocks...)
	}
	if len(o.Threads) == 0 {
		o.Threads = append([]int(nil), DefaultThreads...)
	}
	if o.Time == 0 && o.Events == 0 {
		o.Time = DefaultTime
	}
	if o.TableSize == 0 {
		o.TableSize = DefaultTableSize
	}
	if o.Tables == 0 {
		o.Tables = DefaultTables
	}
	if o.Layout == "" {
		o.Layout = LayoutShared
	}
	if o.Storage == "" {
		o.Storage = StorageMem
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Pairs == 0 {
		o.Pairs = DefaultPairs
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
}

// Validate reports every problem.
func (o *Options) Validate() error {
	var p txnlock.Problems
	if !o.Workload.Valid() {
		p.Addf("unknown workload %q (want one of %s)", o.Workload, joinWorkloads())
	}
	validateLocks(&p, o.Locks)
	if len(o.Threads) == 0 {
		p.Addf("no thread counts")
	}
	for _, t := range o.Threads {
		if t < 1 {
			p.Addf("threads %d: must be at least 1", t)
		}
	}
	if o.Time < 0 {
		p.Addf("time %v is negative", o.Time)
	}
	if o.Events < 0 {
		p.Addf("events %d is negative", o.Events)
	}
	if o.Time == 0 && o.Events == 0 {
		p.Addf("time and events are both 0: a run would never end")
	}
	if o.TableSize < 1 {
		p.Addf("table-size %d: must be at least 1", o.TableSize)
	}
	if o.Tables < 1 {
		p.Addf("tables %d: must be at least 1", o.Tables)
	}
	validateLayout(&p, o.Layout)
	validateStorage(&p, o.Storage)
	if o.LockTimeout < 0 && o.LockTimeout != txnlock.NoWait {
		p.Addf("lock-timeout %v is negative", o.LockTimeout)
	}
	if o.Pairs < 1 {
		p.Addf("pairs %d: must be at least 1", o.Pairs)
	}
	if o.ReportInterval < 0 {
		p.Addf("report-interval %v is negative", o.ReportInterval)
	}
	if o.Delay < 0 {
		p.Addf("delay %v is negative", o.Delay)
	}
	if o.Tables >= 1 {
		if _, err := newDelayTable(o.Delay, o.DelayRules, o.Tables); err != nil {
			p.Addf("%v", err)
		}
	}
	return p.Err()
}

func validateLocks(p *txnlock.Problems, locks []LockKind) {
	if len(locks) == 0 {
		p.Addf("no lock kinds")
	}
	seen := map[LockKind]bool{}
	for _, l := range locks {
		if !l.Valid() {
			p.Addf("unknown lock kind %q (want %s)", l, JoinLocks(LockKinds))
		} else if seen[l] {
			p.Addf("lock kind %q listed twice", l)
		}
		seen[l] = true
	}
}

func validateLayout(p *txnlock.Problems, l Layout) {
	for _, k := range Layouts {
		if l == k {
			return
		}
	}
	p.Addf("unknown cf-layout %q (want shared, per-table or per-index)", l)
}

func validateStorage(p *txnlock.Problems, s Storage) {
	if s != StorageMem && s != StorageDisk {
		p.Addf("unknown storage %q (want mem or disk)", s)
	}
}

// Valid reports whether l is a known lock kind.
func (l LockKind) Valid() bool {
	for _, k := range LockKinds {
		if l == k {
			return true
		}
	}
	return false
}

func joinWorkloads() string {
	parts := make([]string, len(Workloads))
	for i, w := range Workloads {
		parts[i] = string(w)
	}
	return strings.Join(parts, ", ")
}

// String renders the options as the command line that repeats them.
func (o Options) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "--workload=%s --lock=%s --threads=%s --time=%v --events=%d --table-size=%d --tables=%d --cf-layout=%s --storage=%s",
		o.Workload, JoinLocks(o.Locks), JoinInts(o.Threads), o.Time, o.Events, o.TableSize, o.Tables, o.Layout, o.Storage)
	if o.Dir != "" {
		fmt.Fprintf(&sb, " --dir=%s", o.Dir)
	}
	fmt.Fprintf(&sb, " --sync=%t --no-sk=%t --lock-timeout=%v --pairs=%d --seed=%d", o.Sync, o.NoSK, o.LockTimeout, o.Pairs, o.Seed)
	if o.ReportInterval > 0 {
		fmt.Fprintf(&sb, " --report-interval=%v", o.ReportInterval)
	}
	if o.Delay > 0 {
		fmt.Fprintf(&sb, " --delay=%v", o.Delay)
	}
	for _, r := range o.DelayRules {
		fmt.Fprintf(&sb, " --delay-rule='%s'", r)
	}
	if o.DigestStats {
		sb.WriteString(" --digest-stats")
	}
	return sb.String()
}

// tableConfig is the table of one run with lock kind l.
func (o *Options) tableConfig(l LockKind) TableConfig {
	return TableConfig{
		Tables: o.Tables, TableSize: o.TableSize, Layout: o.Layout, NoSK: o.NoSK,
		Storage: o.Storage, Dir: o.Dir, Sync: o.Sync, Lock: l, AutoIncMode: 1,
		LockTimeout: o.LockTimeout,
	}
}
