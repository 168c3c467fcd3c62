package bench

import (
	"context"
	"io"
	"slices"
	"time"
)

// runOrder is the run order for one thread count: Pairs mirrored blocks of
// the lock kinds, each block the kinds one way then the other, every
// second block starting from the other end. For point and range and two
// pairs: point, range, range, point, then range, point, point, range. A
// machine that drifts during a block then favours no kind (each kind's
// mean sits at the block's middle), and no kind always takes the block's
// middle places, or always follows a run of its own kind: whatever those
// places cost (a phase of the machine, the garbage of the run before)
// falls on each kind alike over an even number of pairs.
func runOrder(locks []LockKind, pairs int) []LockKind {
	var out []LockKind
	for p := range pairs {
		first := locks
		if p%2 == 1 {
			first = slices.Clone(locks)
			slices.Reverse(first)
		}
		out = append(out, first...)
		for i := len(first) - 1; i >= 0; i-- {
			out = append(out, first[i])
		}
	}
	return out
}

// Observer sees a plan's progress. Any method may be a no-op.
type Observer interface {
	// RunStart is called before run seq (from 1) of total.
	RunStart(seq, total int, lock LockKind, threads int)
	// RunProgress is called during a run with its fraction done.
	RunProgress(frac float64)
	// RunDone is called with each run's result.
	RunDone(r *RunResult)
}

// pairedRatios returns, for each complete mirrored block of the runs at
// threads (in run order, len(locks) kinds forward then backward), the mean
// QPS of lock in the block divided by the mean QPS of locks[0] in the
// same block. Runs of one block are adjacent in time, so a machine whose
// speed wanders over minutes moves both sides of each ratio together; the
// median of the blocks' ratios is the comparison least moved by it.
func pairedRatios(runs []*RunResult, locks []LockKind, threads int, lock LockKind) []float64 {
	var at []*RunResult
	for _, r := range runs {
		if r.Threads == threads {
			at = append(at, r)
		}
	}
	slices.SortFunc(at, func(a, b *RunResult) int { return a.Seq - b.Seq })
	block := 2 * len(locks)
	var out []float64
	for i := 0; i+block <= len(at); i += block {
		var base, other float64
		var nb, no int
		for _, r := range at[i : i+block] {
			switch r.Lock {
			case locks[0]:
				base += r.QPS()
				nb++
			case lock:
				other += r.QPS()
				no++
			}
		}
		if nb > 0 && no > 0 && base > 0 {
			out = append(out, (other/float64(no))/(base/float64(nb)))
		}
	}
	return out
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. It sorts xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Result is a plan's outcome: every run, and the cells that average them.
type Result struct {
	Options Options      `json:"-"`
	Runs    []*RunResult `json:"runs"`
	Cells   []Cell       `json:"cells"`
	// DriverOverhead is the driver's own time per transaction of this
	// workload on one thread, measured against a table that does nothing
	// (OpenNoop). Zero if not measured.
	DriverOverhead time.Duration `json:"driver_overhead_ns"`
}

// RunPlan runs every lock kind at every thread count in mirrored order,
// each run on a fresh table from open, and summarizes them. On an error
// (a canceled ctx, say) it returns the runs that finished with the error.
// intervalOut receives the intermediate reports (if
// opts.ReportInterval > 0); obs may be nil.
func RunPlan(ctx context.Context, open Opener, opts Options, obs Observer, intervalOut io.Writer) (*Result, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	delays, err := opts.delays(opts.Tables)
	if err != nil {
		return nil, err
	}
	res := &Result{Options: opts}
	order := runOrder(opts.Locks, opts.Pairs)
	total := len(order) * len(opts.Threads)
	seq := 0
	for _, threads := range opts.Threads {
		for _, lock := range order {
			seq++
			if obs != nil {
				obs.RunStart(seq, total, lock, threads)
			}
			spec := RunSpec{
				Workload: opts.Workload, Threads: threads, Time: opts.Time, Events: opts.Events,
				Table: opts.tableConfig(lock), Seed: opts.Seed,
				Delays: delays, DigestStats: opts.DigestStats,
				ReportInterval: opts.ReportInterval, IntervalOut: intervalOut,
			}
			if obs != nil {
				spec.Progress = obs.RunProgress
			}
			r, err := Run(ctx, open, spec)
			if err != nil {
				// Keep what finished, for a partial report.
				res.Cells = summarize(res.Runs, opts.Locks, opts.Threads)
				return res, err
			}
			r.Seq = seq
			res.Runs = append(res.Runs, r)
			if obs != nil {
				obs.RunDone(r)
			}
		}
	}
	res.Cells = summarize(res.Runs, opts.Locks, opts.Threads)
	return res, nil
}

// MeasureDriverOverhead runs the workload on one thread against OpenNoop
// for d and returns the driver's time per transaction.
func MeasureDriverOverhead(ctx context.Context, w Workload, tableSize int, d time.Duration) (time.Duration, error) {
	r, err := Run(ctx, OpenNoop, RunSpec{
		Workload: w, Threads: 1, Time: d,
		Table: TableConfig{Tables: 1, TableSize: tableSize, Lock: LockNone}, Seed: 1,
	})
	if err != nil || r.Txns == 0 {
		return 0, err
	}
	return r.Elapsed / time.Duration(r.Txns), nil
}

// Cell is the summary of one (lock kind, thread count): means over its
// runs, and the median QPS with its interval.
type Cell struct {
	Workload Workload `json:"workload"`
	Lock     LockKind `json:"lock"`
	Threads  int      `json:"threads"`
	Runs     int      `json:"runs"`

	TPS       float64 `json:"tps"`
	QPS       float64 `json:"qps"`
	TPSMin    float64 `json:"tps_min"`
	TPSMax    float64 `json:"tps_max"`
	QPSMin    float64 `json:"qps_min"`
	QPSMax    float64 `json:"qps_max"`
	SpreadPct float64 `json:"spread_pct"` // (max-min)/mean of tps over the runs, in %
	// QPSMedian is the median of the runs' QPS, the figure the comparison
	// table prints. QPSLo and QPSHi bound it with at least 90% confidence
	// when the cell has enough runs (order statistics, as Ratio's
	// interval; with 2 to 4 runs they are the min and max, with 1 the
	// median).
	QPSMedian float64 `json:"qps_median"`
	QPSLo     float64 `json:"qps_lo"`
	QPSHi     float64 `json:"qps_hi"`

	LatAvg time.Duration `json:"lat_avg_ns"` // mean of the runs' averages
	LatP95 time.Duration `json:"lat_p95_ns"` // mean of the runs' 95th percentiles
	LatMax time.Duration `json:"lat_max_ns"` // max over the runs

	Deadlocks   uint64  `json:"deadlocks"` // summed over the runs
	Timeouts    uint64  `json:"timeouts"`  // summed over the runs
	LocksPerTxn float64 `json:"locks_per_txn"`
	VerifyOK    bool    `json:"verify_ok"` // every run's table check passed

	// Ratio compares the cell's QPS with the baseline kind's (the first
	// listed) at the same thread count, pair by pair; nil for the
	// baseline itself and without a complete pair.
	Ratio *Ratio `json:"ratio,omitempty"`
}

// summarize groups runs into cells, ordered by threads, then by lock kind
// as listed.
func summarize(runs []*RunResult, locks []LockKind, threads []int) []Cell {
	var cells []Cell
	for _, t := range threads {
		for _, l := range locks {
			c := Cell{Lock: l, Threads: t, VerifyOK: true}
			var lat, p95 time.Duration
			var qpss []float64
			for _, r := range runs {
				if r.Lock != l || r.Threads != t {
					continue
				}
				tps, qps := r.TPS(), r.QPS()
				qpss = append(qpss, qps)
				if c.Runs == 0 || tps < c.TPSMin {
					c.TPSMin = tps
				}
				if c.Runs == 0 || qps < c.QPSMin {
					c.QPSMin = qps
				}
				c.TPSMax = max(c.TPSMax, tps)
				c.QPSMax = max(c.QPSMax, qps)
				c.Workload = r.Workload
				c.Runs++
				c.TPS += tps
				c.QPS += qps
				lat += r.LatAvg
				p95 += r.LatP95
				c.LatMax = max(c.LatMax, r.LatMax)
				c.Deadlocks += r.Deadlocks
				c.Timeouts += r.Timeouts
				c.LocksPerTxn += r.LocksPerTxn()
				c.VerifyOK = c.VerifyOK && r.Verify.OK()
			}
			if c.Runs == 0 {
				continue
			}
			n := float64(c.Runs)
			c.TPS /= n
			c.QPS /= n
			c.LocksPerTxn /= n
			c.LatAvg = lat / time.Duration(c.Runs)
			c.LatP95 = p95 / time.Duration(c.Runs)
			if c.TPS > 0 {
				c.SpreadPct = 100 * (c.TPSMax - c.TPSMin) / c.TPS
			}
			c.QPSMedian, c.QPSLo, c.QPSHi, _ = medianInterval(qpss)
			if r, ok := pairedRatio(runs, locks, t, l); ok && l != locks[0] {
				c.Ratio = &r
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// cell finds the cell of (l, t).
func cell(cells []Cell, l LockKind, t int) (Cell, bool) {
	i := slices.IndexFunc(cells, func(c Cell) bool { return c.Lock == l && c.Threads == t })
	if i < 0 {
		return Cell{}, false
	}
	return cells[i], true
}
