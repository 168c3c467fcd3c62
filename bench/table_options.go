package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/flagval"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// TableOptions are the settings of the table and its random values that
// a run plan (Options) and a slap (SlapOptions) share; both embed it.
type TableOptions struct {
	// TableSize is the rows per table, loaded before the threads start.
	// Default: DefaultTableSize (10000); SlapOptions: DefaultSlapTableSize
	// (100).
	TableSize int
	// Layout maps tables and indexes to column families. Default:
	// LayoutShared.
	Layout Layout
	// Storage is where the table lives. Default: StorageMem.
	Storage Storage
	// Dir is the parent directory of disk tables. Default: "" (os.TempDir()).
	Dir string
	// Sync makes commits fsync the WAL. Default: false (no fsync, as the
	// RocksDB comparison runs).
	Sync bool
	// LockTimeout is the lock-wait timeout. Default: DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// Seed is the random seed of the ids and values. Default: DefaultSeed (1).
	Seed uint64
}

// EnsureDefaults fills zero fields with their defaults.
func (o *TableOptions) EnsureDefaults() {
	if o.TableSize == 0 {
		o.TableSize = DefaultTableSize
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
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
}

// Validate reports every problem.
func (o *TableOptions) Validate() error {
	var p optcheck.Problems
	o.check(&p)
	return p.Err()
}

// check adds o's problems to p; the messages name the command-line flags.
func (o *TableOptions) check(p *optcheck.Problems) {
	if o.TableSize < 1 {
		p.Addf("table-size %d: must be at least 1", o.TableSize)
	}
	if !slices.Contains(layouts, o.Layout) {
		p.Addf("unknown cf-layout %q (want shared, per-table or per-index)", o.Layout)
	}
	if o.Storage != StorageMem && o.Storage != StorageDisk {
		p.Addf("unknown storage %q (want mem or disk)", o.Storage)
	}
	if o.LockTimeout < 0 && o.LockTimeout != txnlock.NoWait {
		p.Addf("lock-timeout %v is negative", o.LockTimeout)
	}
}

// tableConfig is the table of one run with lock kind l: one table with
// its secondary index and auto-increment mode 0, which the caller changes
// where its options say otherwise.
func (o *TableOptions) tableConfig(l LockKind) TableConfig {
	return TableConfig{
		Tables: 1, TableSize: o.TableSize, Layout: o.Layout, Storage: o.Storage, Dir: o.Dir, Sync: o.Sync,
		Lock: l, LockTimeout: o.LockTimeout,
	}
}

// ThrottleOptions are the statement delays and the digest statistics
// (ProxySQL's) that Options and SlapOptions share; both embed it.
type ThrottleOptions struct {
	// Delay delays every statement (ProxySQL's mysql-default_query_delay).
	// Default: 0.
	Delay time.Duration
	// DelayRules delay the statements of one digest each. Default: none.
	DelayRules []DelayRule
	// DigestStats collects per-digest statistics. Default: false.
	DigestStats bool
}

// check adds o's problems to p, for a run over tables tables (< 1: the
// rules are not resolved, another problem says why).
func (o *ThrottleOptions) check(p *optcheck.Problems, tables int) {
	if o.Delay < 0 {
		p.Addf("delay %v is negative", o.Delay)
	}
	if tables >= 1 {
		if _, err := o.delays(tables); err != nil {
			p.Addf("%v", err)
		}
	}
}

// delays resolves the delays for a run over tables tables.
func (o *ThrottleOptions) delays(tables int) (delayTable, error) {
	return newDelayTable(o.Delay, o.DelayRules, tables)
}

// writeFlags appends the flags that repeat o, each after a space; the
// defaults are left out.
func (o *ThrottleOptions) writeFlags(sb *strings.Builder) {
	if o.Delay > 0 {
		fmt.Fprintf(sb, " --delay=%v", o.Delay)
	}
	for _, r := range o.DelayRules {
		fmt.Fprintf(sb, " --delay-rule='%s'", r)
	}
	if o.DigestStats {
		sb.WriteString(" --digest-stats")
	}
}

// validateCounts adds the problems of a list of thread or client counts,
// the value of the flag named flag: none given, or a count below 1.
func validateCounts(p *optcheck.Problems, flag string, counts []int) {
	if len(counts) == 0 {
		p.Addf("%s: none given", flag)
	}
	for _, n := range counts {
		if n < 1 {
			p.Addf("%s %d: must be at least 1", flag, n)
		}
	}
}

// validateLocks adds the problems of a lock-kind list to p.
func validateLocks(p *optcheck.Problems, locks []LockKind) {
	if len(locks) == 0 {
		p.Addf("no lock kinds")
	}
	seen := map[LockKind]bool{}
	for _, l := range locks {
		if !slices.Contains(lockKinds, l) {
			p.Addf("unknown lock kind %q (want %s)", l, flagval.Join(lockKinds))
		} else if seen[l] {
			p.Addf("lock kind %q listed twice", l)
		}
		seen[l] = true
	}
}
