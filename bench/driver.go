package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
)

// RunSpec is one run: one workload, one lock kind, one thread count, on a
// freshly prepared table.
type RunSpec struct {
	Workload Workload
	Threads  int
	Time     time.Duration // 0: no time limit (Events must be set)
	Events   int64         // 0: no event limit
	Table    TableConfig   // Table.Lock is the lock kind
	Seed     uint64
	// Throttling and digest statistics.
	Delays      delayTable
	DigestStats bool
	// ReportInterval > 0 prints sysbench's intermediate reports to
	// IntervalOut.
	ReportInterval time.Duration
	IntervalOut    io.Writer
	// Progress, if set, is called with the fraction done (0..1) of the run
	// every 100 ms.
	Progress func(frac float64)
}

// RunResult is the outcome of one run: sysbench's final report and the
// lock counts.
type RunResult struct {
	Workload Workload      `json:"workload"`
	Lock     LockKind      `json:"lock"`
	Threads  int           `json:"threads"`
	Seq      int           `json:"seq"` // position in the plan's run order, from 1
	Elapsed  time.Duration `json:"elapsed_ns"`

	Txns      uint64 `json:"transactions"`
	Reads     uint64 `json:"reads"`
	Writes    uint64 `json:"writes"`
	Other     uint64 `json:"other"`
	Deadlocks uint64 `json:"deadlocks"`
	Timeouts  uint64 `json:"timeouts"`

	LatMin time.Duration `json:"lat_min_ns"`
	LatAvg time.Duration `json:"lat_avg_ns"`
	LatMax time.Duration `json:"lat_max_ns"`
	LatP95 time.Duration `json:"lat_p95_ns"`
	LatSum time.Duration `json:"lat_sum_ns"`

	// Threads fairness: events and execution time per thread.
	EventsAvg    float64 `json:"fair_events_avg"`
	EventsStddev float64 `json:"fair_events_stddev"`
	ExecAvg      float64 `json:"fair_exec_avg_s"`
	ExecStddev   float64 `json:"fair_exec_stddev_s"`

	LockRequests uint64 `json:"lock_requests"` // by committed transactions
	// LockTime is the time committed transactions spent inside lock
	// calls, with TableConfig.TimeLocks.
	LockTime  time.Duration `json:"lock_time_ns,omitempty"`
	LockStats txnlock.Stats `json:"-"`
	Detector  DeadlockStats `json:"detector"`
	Verify    VerifyReport  `json:"verify"`
	Digests   []DigestStat  `json:"digests,omitempty"`
}

// Queries is every statement that completed (BEGIN and COMMIT included).
func (r *RunResult) Queries() uint64 { return r.Reads + r.Writes + r.Other }

// TPS is committed transactions per second.
func (r *RunResult) TPS() float64 { return perSec(r.Txns, r.Elapsed) }

// QPS is completed queries per second.
func (r *RunResult) QPS() float64 { return perSec(r.Queries(), r.Elapsed) }

// Errors is the ignored errors: deadlocks and lock-wait timeouts.
func (r *RunResult) Errors() uint64 { return r.Deadlocks + r.Timeouts }

// LocksPerTxn is the lock requests sent per committed transaction.
func (r *RunResult) LocksPerTxn() float64 {
	if r.Txns == 0 {
		return 0
	}
	return float64(r.LockRequests) / float64(r.Txns)
}

// LockTimePerTxn is the time a committed transaction spent inside lock
// calls, on average (TableConfig.TimeLocks; else 0).
func (r *RunResult) LockTimePerTxn() time.Duration {
	if r.Txns == 0 {
		return 0
	}
	return r.LockTime / time.Duration(r.Txns)
}

func perSec(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// threadState is one driver thread's counters. The live ones are atomic
// for the interval reporter; the rest are read after the thread ends.
type threadState struct {
	txns, queries, errs atomic.Uint64
	latSum              atomic.Int64 // ns, committed transactions

	hist         histogram
	exec         time.Duration // time spent in events, failed ones too
	deadlocks    uint64
	timeouts     uint64
	lockRequests uint64
	lockTime     time.Duration // committed transactions'
	sess         *session
	err          error // an error that is neither a deadlock nor a timeout
}

// Run opens a fresh table, runs spec on it, verifies it and closes it.
func Run(ctx context.Context, open Opener, spec RunSpec) (*RunResult, error) {
	if spec.Threads < 1 {
		return nil, fmt.Errorf("bench: threads %d < 1", spec.Threads)
	}
	if spec.Time <= 0 && spec.Events <= 0 {
		return nil, fmt.Errorf("bench: a run needs a time or an event limit")
	}
	db, err := open(ctx, spec.Table)
	if err != nil {
		return nil, &opError{op: "open table", err: err}
	}
	res, err := runOn(ctx, db, spec)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = &opError{op: "close table", err: cerr}
	}
	return res, err
}

// runOn runs spec on an open, prepared table.
func runOn(ctx context.Context, db DB, spec RunSpec) (*RunResult, error) {
	tables := max(spec.Table.Tables, 1)
	threads := make([]*threadState, spec.Threads)
	for i := range threads {
		seed := spec.Seed*1_000_003 + uint64(spec.Threads)*7919 + uint64(i)
		threads[i] = &threadState{sess: newSession(ctx, db, seed, tables, spec.Table.TableSize, spec.Delays, spec.DigestStats)}
	}
	det0 := db.DeadlockStats()
	var stop atomic.Bool
	var claimed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, th := range threads {
		wg.Go(func() { th.loop(spec, &stop, &claimed) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	watch(ctx, spec, threads, start, &stop, &claimed, done)
	elapsed := time.Since(start)

	res := &RunResult{Workload: spec.Workload, Lock: spec.Table.Lock, Threads: spec.Threads, Elapsed: elapsed}
	var h histogram
	var digests digestStats
	if spec.DigestStats {
		digests = newDigestStats(tables)
	}
	events := make([]float64, len(threads))
	execs := make([]float64, len(threads))
	for i, th := range threads {
		if th.err != nil {
			return nil, th.err
		}
		res.Txns += th.txns.Load()
		res.Reads += th.sess.reads
		res.Writes += th.sess.writes
		res.Other += th.sess.other
		res.Deadlocks += th.deadlocks
		res.Timeouts += th.timeouts
		res.LockRequests += th.lockRequests
		res.LockTime += th.lockTime
		h.merge(&th.hist)
		if digests != nil {
			digests.merge(th.sess.digests)
		}
		events[i] = float64(th.txns.Load())
		execs[i] = th.exec.Seconds()
	}
	res.LatMin, res.LatAvg, res.LatMax, res.LatSum = h.min, h.mean(), h.max, h.sum
	res.LatP95 = h.quantile(0.95)
	res.EventsAvg, res.EventsStddev = meanStddev(events)
	res.ExecAvg, res.ExecStddev = meanStddev(execs)
	if digests != nil {
		res.Digests = digests.rows()
	}
	res.LockStats = db.LockStats()
	res.Detector = db.DeadlockStats().Sub(det0)
	v, err := db.Verify()
	if err != nil {
		return nil, &opError{op: "verify", err: err}
	}
	res.Verify = v
	return res, ctx.Err()
}

// loop runs events until stop, the event limit, or an unexpected error.
func (th *threadState) loop(spec RunSpec, stop *atomic.Bool, claimed *atomic.Int64) {
	s := th.sess
	for !stop.Load() {
		if spec.Events > 0 && claimed.Add(1) > spec.Events {
			return
		}
		q0 := s.queries()
		t0 := time.Now()
		err := spec.Workload.event(s)
		lat := time.Since(t0)
		th.exec += lat
		th.queries.Add(s.queries() - q0)
		switch {
		case err == nil:
			th.hist.add(lat)
			th.lockRequests += uint64(s.tx.LockRequests())
			th.lockTime += s.tx.LockTime()
			th.latSum.Add(int64(lat))
			th.txns.Add(1)
		case errors.Is(err, txnlock.ErrDeadlock):
			th.deadlocks++
			th.errs.Add(1)
		case errors.Is(err, txnlock.ErrLockNotGranted):
			th.timeouts++
			th.errs.Add(1)
		case s.ctx.Err() != nil:
			return
		default:
			th.err = &opError{op: string(spec.Workload), unexpected: true, err: err}
			stop.Store(true)
			return
		}
	}
}

// watch waits for the run to end (time up, events done, ctx ended, or
// every thread stopped), printing interval reports and progress.
func watch(ctx context.Context, spec RunSpec, threads []*threadState, start time.Time, stop *atomic.Bool, claimed *atomic.Int64, done <-chan struct{}) {
	var deadline <-chan time.Time
	if spec.Time > 0 {
		t := time.NewTimer(spec.Time)
		defer t.Stop()
		deadline = t.C
	}
	var interval <-chan time.Time
	if spec.ReportInterval > 0 && spec.IntervalOut != nil {
		t := time.NewTicker(spec.ReportInterval)
		defer t.Stop()
		interval = t.C
	}
	var progress <-chan time.Time
	if spec.Progress != nil {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		progress = t.C
	}
	var last intervalSnap
	lastAt := start
	ctxDone := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-deadline:
			stop.Store(true)
			deadline = nil
		case <-ctxDone:
			stop.Store(true)
			ctxDone = nil
		case now := <-interval:
			cur := snap(threads)
			printInterval(spec.IntervalOut, spec.Threads, now.Sub(start), now.Sub(lastAt), cur.sub(last))
			last, lastAt = cur, now
		case now := <-progress:
			frac := 0.0
			if spec.Time > 0 {
				frac = now.Sub(start).Seconds() / spec.Time.Seconds()
			}
			if spec.Events > 0 {
				frac = max(frac, float64(claimed.Load())/float64(spec.Events))
			}
			spec.Progress(min(frac, 1))
		}
	}
}

type intervalSnap struct {
	txns, queries, errs uint64
	latSum              time.Duration
}

func (a intervalSnap) sub(b intervalSnap) intervalSnap {
	return intervalSnap{a.txns - b.txns, a.queries - b.queries, a.errs - b.errs, a.latSum - b.latSum}
}

func snap(threads []*threadState) intervalSnap {
	var s intervalSnap
	for _, th := range threads {
		s.txns += th.txns.Load()
		s.queries += th.queries.Load()
		s.errs += th.errs.Load()
		s.latSum += time.Duration(th.latSum.Load())
	}
	return s
}

// printInterval prints one sysbench intermediate report line.
func printInterval(w io.Writer, threads int, at, span time.Duration, d intervalSnap) {
	var lat float64
	if d.txns > 0 {
		lat = float64(d.latSum) / float64(d.txns) / 1e6
	}
	fmt.Fprintf(w, "[ %ds ] thds: %d tps: %.2f qps: %.2f lat (ms,avg): %.2f err/s: %.2f\n",
		int(at.Round(time.Second)/time.Second), threads, perSec(d.txns, span), perSec(d.queries, span), lat, perSec(d.errs, span))
}

func meanStddev(xs []float64) (mean, stddev float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		stddev += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(stddev / float64(len(xs)))
}
