package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/flagval"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// LoadType is mysqlslap's --auto-generate-sql-load-type.
type LoadType string

// The load types, on table sbtest1.
const (
	LoadMixed  LoadType = "mixed"  // alternately an insert and a full scan
	LoadUpdate LoadType = "update" // UPDATE k=k+1 WHERE id=? (random existing id)
	LoadWrite  LoadType = "write"  // INSERT with an auto-increment id
	LoadKey    LoadType = "key"    // SELECT by primary key
	LoadRead   LoadType = "read"   // SELECT every row (full scan)
)

// loadTypes lists every load type.
var loadTypes = []LoadType{LoadMixed, LoadUpdate, LoadWrite, LoadKey, LoadRead}

// Defaults of SlapOptions: the mysqlslap run that made InnoDB's deadlock
// search give up, -i10 -c200 then -c500, blackhole/MyISAM/InnoDB (none/table/point, and range), mixed.
const (
	DefaultSlapIterations = 10
	DefaultSlapQueries    = 5000
	DefaultSlapTableSize  = 100 // mysqlslap's --auto-generate-sql-write-number
)

// defaultSlapConcurrency is that run's client counts (mysqlslap -c).
var defaultSlapConcurrency = []int{200, 500}

// SlapOptions configure a mysqlslap-style run: for each lock kind and
// concurrency, Iterations times: a fresh table, Concurrency clients each
// running NumberOfQueries/Concurrency autocommit statements, timed from
// the first to the last.
type SlapOptions struct {
	// Concurrency lists the client counts. Default: 200, 500.
	Concurrency []int
	// Iterations runs each (lock, concurrency) this many times. Default:
	// DefaultSlapIterations (10).
	Iterations int
	// Locks are the lock kinds (standing for mysqlslap's engines: none = blackhole,
	// table = MyISAM, point = InnoDB). Default: none, table, point, range.
	Locks []LockKind
	// LoadType is the statement mix. Default: LoadMixed.
	LoadType LoadType
	// AutoIncMode is InnoDB's innodb_autoinc_lock_mode: 0 traditional (a
	// table AUTO-INC lock held to the end of the statement), 1
	// consecutive, 2 interleaved. Default: 0.
	AutoIncMode int
	// NumberOfQueries is the total, split evenly across the clients (as
	// mysqlslap does, rounding down, at least one each). Default:
	// DefaultSlapQueries (5000).
	NumberOfQueries int
	// TableOptions: the table size, layout, storage, lock-wait timeout
	// and random seed. Defaults: TableOptions's, but TableSize is
	// DefaultSlapTableSize (100), mysqlslap's
	// --auto-generate-sql-write-number.
	TableOptions
	// ThrottleOptions: statement delays and digest statistics. Default:
	// none.
	ThrottleOptions
}

// EnsureDefaults fills zero fields with their defaults.
func (o *SlapOptions) EnsureDefaults() {
	if len(o.Concurrency) == 0 {
		o.Concurrency = append([]int(nil), defaultSlapConcurrency...)
	}
	if o.Iterations == 0 {
		o.Iterations = DefaultSlapIterations
	}
	if len(o.Locks) == 0 {
		o.Locks = []LockKind{LockNone, LockTable, LockPoint, LockRange}
	}
	if o.LoadType == "" {
		o.LoadType = LoadMixed
	}
	if o.NumberOfQueries == 0 {
		o.NumberOfQueries = DefaultSlapQueries
	}
	if o.TableSize == 0 {
		o.TableSize = DefaultSlapTableSize
	}
	o.TableOptions.EnsureDefaults()
}

// Validate reports every problem.
func (o *SlapOptions) Validate() error {
	var p optcheck.Problems
	validateCounts(&p, "concurrency", o.Concurrency)
	if o.Iterations < 1 {
		p.Addf("iterations %d: must be at least 1", o.Iterations)
	}
	validateLocks(&p, o.Locks)
	if !o.LoadType.Valid() {
		p.Addf("unknown load-type %q (want mixed, update, write, key or read)", o.LoadType)
	}
	if o.AutoIncMode < 0 || o.AutoIncMode > 2 {
		p.Addf("autoinc-mode %d: want 0, 1 or 2", o.AutoIncMode)
	}
	if o.NumberOfQueries < 1 {
		p.Addf("number-of-queries %d: must be at least 1", o.NumberOfQueries)
	}
	o.TableOptions.check(&p)
	o.ThrottleOptions.check(&p, 1)
	return p.Err()
}

// String renders the options as the command line that repeats them.
func (o SlapOptions) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "--concurrency=%s --iterations=%d --lock=%s --load-type=%s --autoinc-mode=%d --number-of-queries=%d --table-size=%d --cf-layout=%s --storage=%s",
		flagval.Join(o.Concurrency), o.Iterations, flagval.Join(o.Locks), o.LoadType, o.AutoIncMode, o.NumberOfQueries, o.TableSize, o.Layout, o.Storage)
	if o.Dir != "" {
		fmt.Fprintf(&sb, " --dir=%s", o.Dir)
	}
	fmt.Fprintf(&sb, " --sync=%t --lock-timeout=%v --seed=%d", o.Sync, o.LockTimeout, o.Seed)
	o.ThrottleOptions.writeFlags(&sb)
	return sb.String()
}

// Valid reports whether t is a known load type.
func (t LoadType) Valid() bool {
	for _, k := range loadTypes {
		if t == k {
			return true
		}
	}
	return false
}

// SlapResult is one (lock kind, concurrency) over its iterations.
type SlapResult struct {
	Lock             LockKind      `json:"lock"`
	Concurrency      int           `json:"clients"`
	Iterations       int           `json:"iterations"`
	QueriesPerClient int           `json:"queries_per_client"`
	Avg              time.Duration `json:"avg_ns"`
	Min              time.Duration `json:"min_ns"`
	Max              time.Duration `json:"max_ns"`

	Deadlocks uint64 `json:"deadlocks"` // victims of real cycles
	Assumed   uint64 `json:"assumed"`   // victims of a breaker trip (assume-deadlock policy)
	Trips     uint64 `json:"trips"`     // detector breaker trips, deferred or not
	Deferred  uint64 `json:"deferred"`  // trips handed to the background pass
	Timeouts  uint64 `json:"timeouts"`
	Retries   uint64 `json:"retries"` // statements re-run after a deadlock or timeout

	// Row check, summed over the iterations.
	RowsExpected int64    `json:"rows_expected"`
	RowsFound    int64    `json:"rows_found"`
	DuplicateIDs int64    `json:"duplicate_ids"` // in the table, or handed out twice by InsertAuto
	Problems     []string `json:"problems,omitempty"`

	// AUTO-INC check, summed over the iterations: the ids of committed
	// inserts, against the consecutive ids after the prepared rows.
	Inserts         int64  `json:"inserts"`          // committed inserts
	InsertRollbacks uint64 `json:"insert_rollbacks"` // insert statements rolled back (each may consume an id)
	AutoIncGaps     int64  `json:"autoinc_gaps"`     // ids skipped below the greatest id handed out

	Digests []DigestStat `json:"digests,omitempty"`
}

// CheckOK reports whether every iteration's table held exactly the rows
// expected, without duplicate ids, and (AUTO-INC mode 0) without gaps in
// the ids unless an insert was rolled back.
func (r *SlapResult) CheckOK() bool {
	return r.RowsExpected == r.RowsFound && r.DuplicateIDs == 0 && len(r.Problems) == 0
}

// slapCounters are one client's error counts.
type slapCounters struct {
	deadlocks, assumed, timeouts, retries uint64
	insertRollbacks                       uint64
	inserted                              []int64 // ids that InsertAuto returned, committed
}

// RunSlap runs every lock kind at every concurrency. progress, if set, is
// told each (lock, concurrency) before it starts.
func RunSlap(ctx context.Context, open Opener, o SlapOptions, progress func(lock LockKind, clients int)) ([]*SlapResult, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	delays, err := o.delays(1)
	if err != nil {
		return nil, err
	}
	var out []*SlapResult
	for _, clients := range o.Concurrency {
		for _, lock := range o.Locks {
			if progress != nil {
				progress(lock, clients)
			}
			r, err := slapCell(ctx, open, o, delays, lock, clients)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func slapCell(ctx context.Context, open Opener, o SlapOptions, delays delayTable, lock LockKind, clients int) (*SlapResult, error) {
	r := &SlapResult{Lock: lock, Concurrency: clients, Iterations: o.Iterations, QueriesPerClient: max(o.NumberOfQueries/clients, 1)}
	var digests digestStats
	if o.DigestStats {
		digests = newDigestStats(1)
	}
	cfg := o.tableConfig(lock)
	cfg.AutoIncMode = o.AutoIncMode
	var times durationStats
	for it := range o.Iterations {
		db, err := open(ctx, cfg)
		if err != nil {
			return nil, &opError{op: "open table", err: err}
		}
		d, err := slapIteration(ctx, db, o, delays, r, digests, clients, uint64(it))
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		times.add(d)
	}
	r.Avg, r.Min, r.Max = times.mean(), times.min, times.max
	if digests != nil {
		r.Digests = digests.rows()
	}
	return r, nil
}

// slapIteration runs the clients once on db and adds its counts to r.
func slapIteration(ctx context.Context, db DB, o SlapOptions, delays delayTable, r *SlapResult, digests digestStats, clients int, it uint64) (time.Duration, error) {
	det0 := db.DeadlockStats()
	counters := make([]slapCounters, clients)
	sessions := make([]*session, clients)
	errs := make([]error, clients)
	for i := range sessions {
		seed := o.Seed*1_000_003 + it*100_003 + uint64(i)
		sessions[i] = newSession(ctx, db, seed, 1, o.TableSize, delays, digests != nil)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() { errs[i] = slapClient(sessions[i], o.LoadType, r.QueriesPerClient, &counters[i]) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	seen := make(map[int64]bool)
	var inserted, maxID int64
	var rollbacks uint64
	for i := range counters {
		c := &counters[i]
		r.Deadlocks += c.deadlocks
		r.Assumed += c.assumed
		r.Timeouts += c.timeouts
		r.Retries += c.retries
		rollbacks += c.insertRollbacks
		for _, id := range c.inserted {
			if seen[id] {
				r.DuplicateIDs++
			}
			seen[id] = true
			maxID = max(maxID, id)
		}
		inserted += int64(len(c.inserted))
		if digests != nil {
			digests.merge(sessions[i].digests)
		}
	}
	r.checkAutoInc(o, inserted, rollbacks, maxID, int64(len(seen)))
	det := db.DeadlockStats().Sub(det0)
	r.Trips += det.Trips
	r.Deferred += det.Deferred
	v, err := db.Verify()
	if err != nil {
		return 0, &opError{op: "verify", err: err}
	}
	r.RowsExpected += int64(o.TableSize) + inserted
	r.RowsFound += v.Rows
	r.DuplicateIDs += v.DuplicateIDs
	r.Problems = append(r.Problems, v.Problems...)
	return elapsed, nil
}

// checkAutoInc adds one iteration's AUTO-INC figures to r: ids are handed
// out from TableSize+1, so the ids below the greatest one that no
// committed insert holds are gaps. In mode 0 (a table AUTO-INC lock held
// to the end of the statement) a gap without a rolled-back insert is a
// problem; in modes 1 and 2 gaps are counted only.
func (r *SlapResult) checkAutoInc(o SlapOptions, inserted int64, rollbacks uint64, maxID, distinct int64) {
	r.Inserts += inserted
	r.InsertRollbacks += rollbacks
	if distinct == 0 {
		return
	}
	gaps := maxID - int64(o.TableSize) - distinct
	r.AutoIncGaps += gaps
	if o.AutoIncMode == 0 && rollbacks == 0 && gaps > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("AUTO-INC mode 0: %d ids skipped without a rolled-back insert", gaps))
	}
}

// slapClient runs n autocommit statements. A deadlock victim or a
// timed-out statement is rolled back and run again, as an application
// that reads "try restarting transaction" does.
func slapClient(s *session, lt LoadType, n int, c *slapCounters) error {
	for q := range n {
		kind := lt
		if lt == LoadMixed {
			kind = LoadWrite
			if q%2 == 1 {
				kind = LoadRead
			}
		}
		id := s.id()
		for {
			newID, err := slapStatement(s, kind, id)
			if err == nil {
				if kind == LoadWrite {
					c.inserted = append(c.inserted, newID)
				}
				break
			}
			var de *txnlock.DeadlockError
			switch {
			case errors.As(err, &de) && de.LimitExceeded:
				c.assumed++
			case errors.Is(err, txnlock.ErrDeadlock):
				c.deadlocks++
			case errors.Is(err, txnlock.ErrLockNotGranted):
				c.timeouts++
			default:
				if s.ctx.Err() != nil {
					return s.ctx.Err()
				}
				return &opError{op: "slap " + string(kind), unexpected: true, err: err}
			}
			c.retries++
			if kind == LoadWrite {
				c.insertRollbacks++
			}
		}
	}
	return nil
}

// fullScanEnd is the upper id of a full scan.
const fullScanEnd = 1 << 62

// slapStatement runs one autocommit statement of kind on id (the id is
// ignored by inserts and scans); it returns the id an insert got.
func slapStatement(s *session, kind LoadType, id int64) (int64, error) {
	s.begin(false)
	var err error
	var newID int64
	switch kind {
	case LoadWrite:
		newID, err = s.insertAuto(1, s.id())
	case LoadUpdate:
		err = s.updateIndex(1, id)
	case LoadKey:
		err = s.pointSelect(1, id)
	case LoadRead:
		err = s.rangeSelect(stmtFullScan, 1, 1, fullScanEnd, false)
	}
	if err == nil {
		err = s.commit(false)
	}
	if err != nil {
		s.rollback()
	}
	return newID, err
}

// WriteSlapReport prints the results as mysqlslap does, with the lock
// counts and the row check after each block.
func WriteSlapReport(w io.Writer, rs []*SlapResult) {
	for _, r := range rs {
		fmt.Fprintf(w, "Benchmark\n")
		fmt.Fprintf(w, "\tRunning for lock %s (%s)\n", r.Lock, engineOf(r.Lock))
		fmt.Fprintf(w, "\tAverage number of seconds to run all queries: %.3f seconds\n", r.Avg.Seconds())
		fmt.Fprintf(w, "\tMinimum number of seconds to run all queries: %.3f seconds\n", r.Min.Seconds())
		fmt.Fprintf(w, "\tMaximum number of seconds to run all queries: %.3f seconds\n", r.Max.Seconds())
		fmt.Fprintf(w, "\tNumber of clients running queries: %d\n", r.Concurrency)
		fmt.Fprintf(w, "\tAverage number of queries per client: %d\n", r.QueriesPerClient)
		fmt.Fprintf(w, "\tDeadlocks: %d real / %d breaker trips (%d deferred to the background pass, %d reported as deadlocks)\n", r.Deadlocks, r.Trips, r.Deferred, r.Assumed)
		fmt.Fprintf(w, "\tLock wait timeouts: %d\n", r.Timeouts)
		fmt.Fprintf(w, "\tRetries (try restarting transaction): %d\n", r.Retries)
		status := "ok"
		if !r.CheckOK() {
			status = "FAILED"
			if len(r.Problems) > 0 {
				status += ": " + strings.Join(r.Problems, "; ")
			}
		}
		fmt.Fprintf(w, "\tRow check over %d iterations: %d rows expected, %d found, %d duplicate ids: %s\n",
			r.Iterations, r.RowsExpected, r.RowsFound, r.DuplicateIDs, status)
		if r.Inserts > 0 || r.InsertRollbacks > 0 {
			fmt.Fprintf(w, "\tAUTO-INC ids: %d inserted, %d skipped (gaps), %d inserts rolled back\n",
				r.Inserts, r.AutoIncGaps, r.InsertRollbacks)
		}
		if len(r.Digests) > 0 {
			fmt.Fprintf(w, "\tDigest statistics:\n")
			writeDigestStats(w, r.Digests)
		}
		fmt.Fprintln(w)
	}
}

// engineOf names the mysqlslap engine that a lock kind stands for.
func engineOf(l LockKind) string {
	switch l {
	case LockNone:
		return "like blackhole: no locks"
	case LockTable:
		return "like MyISAM: table locks"
	case LockPoint:
		return "like InnoDB: row locks"
	case LockRange:
		return "row and range locks"
	case LockPointSK:
		return "row and index-entry locks"
	}
	return string(l)
}
