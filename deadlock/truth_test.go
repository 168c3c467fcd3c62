package deadlock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/locktable"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestTruth drives the lock table core and a Detector on one goroutine, a
// seeded scheduler choosing every step, so that the true waits-for graph is
// known at every step, and checks the detector against it: every deadlock
// it reports was a real cycle, and no real cycle outlives the step that
// closed it.
//
// The scheduler is a point manager without goroutines, shaped like
// pointlock: a locktable.Table per column family, a locktable.Holds per
// transaction (keys of all column families in one Holds, Holder.Home
// telling them apart), and the detector seam used as pointlock uses it:
//   - the scheduler answers the detector's questions about a waiter
//     (lockwait.Source): Blockers are its key's holders, WaitsFor is
//     Lock.WaitsFor;
//   - each queued waiter takes a Stamp where it is queued and notes the
//     holders it is queued behind; then, as its goroutine would,
//     Block(edge) and, if Block asks, Check(waiter); a Check error fails
//     the waiter (lockwait.Waiter's report);
//   - a waiter that stops waiting (granted, or failed by the detector) is
//     Unblocked by its "goroutine". That goroutine may lag: a granted or
//     failed waiter's Unblock, and a failed waiter's leaving its queue and
//     rolling back, may run some steps later, as a goroutine that has not
//     been scheduled yet would (also the requester's: its Check returned
//     the error, and its Lock has yet to take the manager's lock to
//     leave); meanwhile the detector still has the wait (inactive) and
//     the transaction does nothing else.
//
// A step is one of: a transaction that neither waits nor lags requests a
// random key of a random column family, Shared or Exclusive (covered,
// granted, or queued and reported to the detector); such a transaction
// commits (releases everything; its slot takes a new transaction id) or
// releases one of its locks early (Unlock); a wait is cancelled (the
// waiter fails, as on a timeout or a cancelled context, and its
// transaction rolls back); or a lagging goroutine runs. A failed waiter,
// once its goroutine runs, leaves its queue (the queue is granted again
// through Lock.Grants) and its transaction rolls back (Holds.ReleaseAll,
// each Lock granted again). A transaction waits in at most one place at
// a time.
//
// The truth, after every step and just before each Check: each queued,
// active waiter waits for Lock.WaitsFor (internal/waitsfor's rule: its
// nearest conflicting requests ahead, else its conflicting holders), which
// keeps everyone it truly waits for reachable. The detector searches the
// contracted graph, waiter → holders of its lock, and confirms a cycle by
// the exact edges before it reports it, with the queued requests the
// contraction left out as members. So the checks are:
//  1. every reported cycle was real just before its Check: each member had
//     that very wait queued and active, the next member is among those the
//     report says it waits for, and in the true graph the member waits for
//     the next member; the victim is a member, and no member is the victim
//     of an earlier cycle of the same Check;
//  2. after every step the true graph has no cycle: the on-block checks
//     must have broken every cycle the step closed, at once.
//
// A waiter queued behind a failed waiter whose goroutine lags may
// conflict with nothing but that waiter, which the core leaves in the
// queue until its goroutine unlinks it and grants the queue again: it
// then waits for that goroutine, and the truth says so (an edge to the
// failed transaction, which waits for nothing).
//
// Besides: every queued active waiter truly waits for someone; the
// detector's count of waits matches the waits reported and not yet
// Unblocked (nor removed as victims); no search trips or is deferred.
//
// Decisions: the detector is the package's Detector with Detection
// OnBlock and otherwise zero Options but two: a manual clock (the search
// time limit is read from it, so a slow run, as under -race, cannot trip
// and defer), and the victim policy, the default (VictimRequester) in half
// the runs, VictimYoungest or VictimFewestLocks in the others, so that
// members other than the requester are failed too, several per Check at
// times. It runs without its background goroutine (newDetector(opts,
// false)): a cycle the on-block checks miss then stays in the graph for
// check 2 to see, and nothing runs concurrently, so a run is a function
// of its seed. The reports are collected in order through
// Detector.testingOnBreak.
//
// While a failed waiter's goroutine has yet to unlink it, a waiter behind
// it that conflicts with no holder (Shared behind a failed Exclusive
// request, on a key held Shared) waits for nothing but that goroutine, yet
// the contracted graph has it waiting for the key's holders: a search may
// find a cycle through it that is not there, and confirmation must reject
// it (TestTruthFailedWaiterAhead). Half the runs let failed waiters'
// goroutines lag, the others only granted ones'; -truth.lagfailed makes
// every run let them lag.
//
// Each run draws its shape (transactions, column families, keys, mix) from
// its own random seed. A failure prints that random seed and the trace of steps; -seed N,
// or DEADLOCK_TRUTH_SEED=N, replays that one run. -long runs many more.
func TestTruth(t *testing.T) {
	runs, steps := 100, 400
	if *long {
		runs, steps = 20_000, 2_000
	}
	if s, ok := truthSeedArg(t); ok {
		runs = 1
		cfg := truthConfigOf(s, steps)
		cfg.lagFailed = cfg.lagFailed || *truthLagFailed
		if err := runTruth(cfg); err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
		return
	}
	base := rand.Uint64()
	rng := rand.New(rand.NewPCG(base, 0))
	t.Logf("runs drawn from base %d; each failure names its own seed", base)
	var tot truthTotals
	for range runs {
		s := rng.Uint64()
		cfg := truthConfigOf(s, steps)
		cfg.lagFailed = cfg.lagFailed || *truthLagFailed
		cfg.totals = &tot
		if err := runTruth(cfg); err != nil {
			t.Fatalf("seed %d (replay: go test ./deadlock -run 'TestTruth$' -seed %d): %v", s, s, err)
		}
	}
	t.Logf("%d runs × %d steps: %v", runs, steps, tot)
}

var truthLagFailed = flag.Bool("truth.lagfailed", false, "let every TestTruth run's failed waiters lag (half the runs do)")

var truthSeed = flag.Uint64("seed", 0, "replay one run of TestTruth with this seed (0: random runs; also DEADLOCK_TRUTH_SEED)")

func truthSeedArg(t *testing.T) (uint64, bool) {
	if *truthSeed != 0 {
		return *truthSeed, true
	}
	if v := os.Getenv("DEADLOCK_TRUTH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "DEADLOCK_TRUTH_SEED")
		return s, true
	}
	return 0, false
}

// truthMutation names a seam call the harness skips or gets wrong, to show
// that the checks catch a broken detector (TestTruthMutations).
type truthMutation uint8

const (
	mutNone               truthMutation = iota
	mutNoCheck                          // Block's request for a Check is ignored
	mutNoFail                           // a Check error does not fail the requester: it sleeps on
	mutBlockersAsQueue                  // Blockers are the holders and every queued waiter
	mutBlockersNoUpgrade                // Blockers leave out a holder that waits to upgrade
	mutWaitsForContracted               // WaitsFor answers the holders, as Blockers does
	mutNoUnblock                        // a wait that ended is never Unblocked
)

var truthMutations = [...]string{
	mutNone:               "none",
	mutNoCheck:            "no-check",
	mutNoFail:             "check-error-ignored",
	mutBlockersAsQueue:    "blockers-include-queue",
	mutBlockersNoUpgrade:  "blockers-without-upgrader",
	mutWaitsForContracted: "waitsfor-contracted",
	mutNoUnblock:          "no-unblock",
}

func (m truthMutation) String() string { return truthMutations[m] }

// truthConfig is the shape of one run.
type truthConfig struct {
	seed            uint64
	steps           int
	txns, cfs, keys int
	pX              int // percent: Exclusive requests
	pCommit         int // percent: commits among a free transaction's steps
	pUnlock         int // percent: single unlocks among them
	pCancel         int // percent: steps that cancel a random wait (its context)
	pLag            int // percent: a waiter's goroutine lags after its wait ended
	// lagFailed lets a failed waiter's goroutine lag too (with pLag), not
	// only a granted one's: see TestTruthFailedWaiterAhead.
	lagFailed bool
	victim    Victim
	// script, if set, replaces the random steps: one request per step.
	script   []truthOp
	mutation truthMutation
	totals   *truthTotals
}

// truthConfigOf draws a run's shape from its seed.
func truthConfigOf(seed uint64, steps int) truthConfig {
	rng := rand.New(rand.NewPCG(seed, 1))
	return truthConfig{
		seed:    seed,
		steps:   steps,
		txns:    2 + rng.IntN(11),
		cfs:     1 + rng.IntN(3),
		keys:    1 + rng.IntN(4),
		pX:      20 + rng.IntN(61),
		pCommit: 5 + rng.IntN(21),
		pUnlock: rng.IntN(16),
		pCancel: rng.IntN(5),
		pLag:    rng.IntN(61),
		// Half the runs let a failed waiter's goroutine lag too.
		lagFailed: rng.IntN(2) == 0,
		// Half the runs the default: the requester, whose wait is the
		// newest of any cycle it closes here, is always the victim. The
		// others fail other members, maybe several per Check.
		victim: [...]Victim{VictimRequester, VictimRequester, VictimYoungest, VictimFewestLocks}[rng.IntN(4)],
	}
}

func (c truthConfig) String() string {
	return fmt.Sprintf("txns=%d cfs=%d keys=%d x=%d%% commit=%d%% unlock=%d%% cancel=%d%% lag=%d%% lagfailed=%v victim=%v steps=%d mutation=%v",
		c.txns, c.cfs, c.keys, c.pX, c.pCommit, c.pUnlock, c.pCancel, c.pLag, c.lagFailed, c.victim, c.steps, c.mutation)
}

// truthOp is a scripted request: slot's transaction asks key of cf in mode.
type truthOp struct {
	slot, cf, key int
	mode          txnlock.Mode
}

// truthTotals sums what the runs did.
type truthTotals struct {
	steps, requests, waits, commits, unlocks, cancels, deadlocks, maxCycle int
	otherVictims                                                           int // victims other than the requester
	severalCycles                                                          int // Checks that broke more than one cycle
	unconfirmed                                                            int // cycles found that confirmation rejected
}

func (t truthTotals) String() string {
	return fmt.Sprintf("steps=%d requests=%d waits=%d commits=%d unlocks=%d cancels=%d deadlocks=%d other_victims=%d checks_breaking_several=%d longest_cycle=%d unconfirmed=%d",
		t.steps, t.requests, t.waits, t.commits, t.unlocks, t.cancels, t.deadlocks, t.otherVictims, t.severalCycles, t.maxCycle, t.unconfirmed)
}

// truthSlot is one transaction at a time.
type truthSlot struct {
	txn   txnlock.TxnID
	holds *locktable.Holds
	wait  *truthWait // the queued request, or nil
	// lag is a wait that ended (granted or failed) whose goroutine has
	// not run yet; the transaction does nothing until it has.
	lag *truthWait
}

// truthWait is one queued request.
type truthWait struct {
	w     *lockwait.Waiter
	l     *locktable.Lock
	cf    int
	key   int
	inDet bool // reported (Block) and neither Unblocked nor a victim
}

type truthSched struct {
	cfg     truthConfig
	rng     *rand.Rand
	det     *Detector
	clock   *manualclock.Clock
	tabs    []locktable.Table
	slots   []*truthSlot
	byTxn   map[txnlock.TxnID]*truthSlot
	nextTxn txnlock.TxnID
	broken  []*txnlock.DeadlockError // by testingOnBreak, in order
	trace   []string
	step    int
	tot     truthTotals
}

// truthTraceKeep is how many trace lines a failure prints.
const truthTraceKeep = 60

func runTruth(cfg truthConfig) (err error) {
	clock := manualclock.New()
	det, err := newDetector(Options{Clock: clock, Victim: cfg.victim}, false)
	if err != nil {
		return err
	}
	s := &truthSched{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.seed, 2)),
		det:   det,
		clock: clock,
		tabs:  make([]locktable.Table, cfg.cfs),
		byTxn: map[txnlock.TxnID]*truthSlot{},
	}
	det.Seam().Attach(s)
	det.testingOnBreak = func(de *txnlock.DeadlockError) {
		// Under det.mu, on this goroutine, inside Check: keep a copy.
		c := *de
		c.Cycle = slices.Clone(de.Cycle)
		s.broken = append(s.broken, &c)
	}
	for range cfg.txns {
		sl := &truthSlot{holds: &locktable.Holds{}}
		s.slots = append(s.slots, sl)
		s.newTxn(sl)
	}
	defer func() {
		if err != nil {
			lo := max(0, len(s.trace)-truthTraceKeep)
			err = fmt.Errorf("step %d: %w\n%v\nlast %d steps:\n%s\nstate:\n%s", s.step, err, cfg, len(s.trace)-lo,
				strings.Join(s.trace[lo:], "\n"), s.describe())
		}
		if cerr := det.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for s.step = 1; s.step <= cfg.steps; s.step++ {
		if err := s.doStep(); err != nil {
			return err
		}
		if err := s.checkAfterStep(); err != nil {
			return err
		}
	}
	s.tot.unconfirmed = int(s.coreStats().FalsePositivesAvoided)
	s.tot.steps = cfg.steps
	if cfg.totals != nil {
		t := cfg.totals
		t.steps += s.tot.steps
		t.requests += s.tot.requests
		t.waits += s.tot.waits
		t.commits += s.tot.commits
		t.unlocks += s.tot.unlocks
		t.cancels += s.tot.cancels
		t.deadlocks += s.tot.deadlocks
		t.unconfirmed += s.tot.unconfirmed
		t.otherVictims += s.tot.otherVictims
		t.severalCycles += s.tot.severalCycles
		t.maxCycle = max(t.maxCycle, s.tot.maxCycle)
	}
	return nil
}

func (s *truthSched) logf(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("%4d  ", s.step)+fmt.Sprintf(format, args...))
}

func (s *truthSched) newTxn(sl *truthSlot) {
	s.nextTxn++
	sl.txn = s.nextTxn
	sl.holds.Reset(16)
	sl.holds.Txn = sl.txn
	s.byTxn[sl.txn] = sl
}

func truthKey(cf, key int) []byte { return []byte{'c', byte('0' + cf), 'k', byte('0' + key)} }

func (s *truthSched) hash(cf, key int) uint64 { return uint64(cf*s.cfg.keys + key) }

// cfOf tells a Lock's column family and key index from its key.
func cfOf(l *locktable.Lock) (cf, key int) {
	k := l.Key()
	return int(k[1] - '0'), int(k[3] - '0')
}

func modeName(m txnlock.Mode) string {
	if m == txnlock.Exclusive {
		return "X"
	}
	return "S"
}

// doStep makes one step.
func (s *truthSched) doStep() error {
	if s.cfg.script != nil {
		op := s.cfg.script[s.step-1]
		return s.request(s.slots[op.slot], op.cf, op.key, op.mode)
	}
	var free, waiting []*truthSlot
	for _, sl := range s.slots {
		if sl.wait == nil {
			free = append(free, sl)
		} else {
			waiting = append(waiting, sl)
		}
	}
	if len(waiting) > 0 && s.rng.IntN(100) < s.cfg.pCancel {
		return s.cancel(waiting[s.rng.IntN(len(waiting))])
	}
	if len(free) == 0 {
		return errors.New("every transaction waits, yet the previous step left no cycle")
	}
	sl := free[s.rng.IntN(len(free))]
	if sl.lag != nil {
		return s.runLagging(sl)
	}
	switch p := s.rng.IntN(100); {
	case p < s.cfg.pCommit:
		s.logf("t%d commits, holding %d", sl.txn, sl.holds.Len())
		s.tot.commits++
		s.releaseAll(sl)
		return nil
	case p < s.cfg.pCommit+s.cfg.pUnlock && sl.holds.Len() > 0:
		return s.unlock(sl)
	}
	return s.request(sl, s.rng.IntN(s.cfg.cfs), s.rng.IntN(s.cfg.keys), s.randMode())
}

func (s *truthSched) randMode() txnlock.Mode {
	if s.rng.IntN(100) < s.cfg.pX {
		return txnlock.Exclusive
	}
	return txnlock.Shared
}

// cancel fails sl's wait as its cancelled context would (Waiter.Wait's
// Fail), outside any manager lock; its goroutine then runs, or lags. A
// cancelled request's transaction rolls back.
func (s *truthSched) cancel(sl *truthSlot) error {
	tw := sl.wait
	if !tw.w.Fail(context.Canceled) {
		return fmt.Errorf("t%d's wait had ended", sl.txn)
	}
	s.logf("t%d's wait is cancelled", sl.txn)
	s.tot.cancels++
	sl.wait, sl.lag = nil, tw
	if s.rng.IntN(100) < s.cfg.pLag && s.cfg.lagFailed {
		s.logf("  t%d's goroutine lags", sl.txn)
		return nil
	}
	return s.runLagging(sl)
}

// unlock releases one lock of sl's transaction, chosen at random, as
// pointlock's Unlock does (an early release: a Shared lock of a
// statement that has read, say).
func (s *truthSched) unlock(sl *truthSlot) error {
	var all []*locktable.Holder
	sl.holds.All(func(hd *locktable.Holder) bool { all = append(all, hd); return true })
	hd := all[s.rng.IntN(len(all))]
	l := hd.Lock()
	s.logf("t%d unlocks %s %s", sl.txn, modeName(hd.Mode()), l.Key())
	s.tot.unlocks++
	if !l.Release(sl.txn) {
		return fmt.Errorf("t%d does not hold %s", sl.txn, l.Key())
	}
	s.settle(l)
	return nil
}

// request runs a lock request of sl's transaction as pointlock's Lock
// does, with the waiter's report (Block, Check) made at once.
func (s *truthSched) request(sl *truthSlot, cf, key int, mode txnlock.Mode) error {
	s.tot.requests++
	tab := &s.tabs[cf]
	k, h := truthKey(cf, key), s.hash(cf, key)
	l, pos := tab.Find(h, k)
	if l == nil {
		l = tab.New(pos, h, k)
	}
	d, upgrade := l.Decide(sl.txn, mode, false)
	name := fmt.Sprintf("t%d %s %s", sl.txn, modeName(mode), k)
	switch d {
	case locktable.Covered:
		s.logf("%s: covered", name)
		return nil
	case locktable.Grant, locktable.GrantPast:
		s.logf("%s: granted", name)
		l.Grant(sl.holds, mode, uint16(cf))
		return nil
	}
	// Queue it (pointlock's enqueueLocked).
	det := l.Det()
	if !det.Ref.Valid() {
		det.Ref = txnlock.Point([]byte(l.Key()))
	}
	w := lockwait.New(sl.txn, txnlock.LockRef{CF: txnlock.ColumnFamily(cf), Range: det.Ref, Mode: mode}, s.clock.Now())
	w.Upgrade = upgrade
	l.Enqueue(w)
	w.Ext, w.Src = l, s
	w.Blocked = s.blockersOf(l, w)
	w.WatchGrants(l.GrantCount())
	w.Stamp = s.det.stamps.Add(1)
	tw := &truthWait{w: w, l: l, cf: cf, key: key}
	sl.wait = tw
	s.tot.waits++

	before, err := s.truth()
	if err != nil {
		return err
	}
	s.logf("%s: waits%s for %s", name, map[bool]string{true: " (upgrade)"}[upgrade], txnsString(before[sl.txn]))

	// The waiter's goroutine (lockwait.Waiter.report).
	s.broken = s.broken[:0]
	deadlocks := s.coreStats().Deadlocks
	edge := detect.Edge{Waiter: w, Stamp: w.Stamp, Blockers: w.Blocked}
	tw.inDet = true
	if s.det.block(edge) && s.cfg.mutation != mutNoCheck {
		if err := s.det.check(w, w.Txn()); err != nil && s.cfg.mutation != mutNoFail {
			w.Fail(err)
		}
	}
	return s.afterCheck(sl, before, deadlocks)
}

// afterCheck checks the cycles the requester's Check broke against the
// truth before it, then lets the victims' goroutines run, or lag.
func (s *truthSched) afterCheck(req *truthSlot, before map[txnlock.TxnID][]txnlock.TxnID, deadlocks uint64) error {
	if n := s.coreStats().Deadlocks - deadlocks; n != uint64(len(s.broken)) {
		return fmt.Errorf("the detector counts %d deadlocks, %d were broken", n, len(s.broken))
	}
	victims := map[txnlock.TxnID]bool{}
	if len(s.broken) > 1 {
		s.tot.severalCycles++
	}
	for _, de := range s.broken {
		if de.Victim != req.txn {
			s.tot.otherVictims++
		}
		s.logf("  deadlock, victim t%d: %s", de.Victim, cycleString(de))
		s.tot.deadlocks++
		s.tot.maxCycle = max(s.tot.maxCycle, len(de.Cycle))
		if err := s.checkReport(de, before, victims); err != nil {
			return fmt.Errorf("%w\nreport:\n%s", err, de.Report())
		}
		victims[de.Victim] = true
		sl := s.byTxn[de.Victim] // its wait stays reported until its goroutine Unblocks it
		var got *txnlock.DeadlockError
		if !errors.As(sl.wait.w.Err(), &got) || got.Victim != de.Victim {
			if s.cfg.mutation == mutNoFail && sl == req {
				continue // the requester sleeps on, as the mutation says
			}
			return fmt.Errorf("victim t%d was not failed with its deadlock (its error: %v)", de.Victim, sl.wait.w.Err())
		}
	}
	// Anyone else failed or granted meanwhile? Nothing but the detector
	// can have touched a waiter during the Check.
	for _, sl := range s.slots {
		if sl.wait != nil && !sl.wait.w.Active() && !victims[sl.txn] {
			return fmt.Errorf("t%d's wait ended during the Check but it is no victim (error %v)", sl.txn, sl.wait.w.Err())
		}
	}
	// The victims' goroutines wake: the requester's at once.
	for _, sl := range s.slots {
		if sl.wait == nil || !victims[sl.txn] || sl.wait.w.Active() {
			continue
		}
		tw := sl.wait
		sl.wait, sl.lag = nil, tw
		if s.rng.IntN(100) < s.cfg.pLag && s.cfg.lagFailed {
			s.logf("  t%d's goroutine lags", sl.txn)
			continue
		}
		if err := s.runLagging(sl); err != nil {
			return err
		}
	}
	return nil
}

// checkReport is check 1 for one reported cycle.
func (s *truthSched) checkReport(de *txnlock.DeadlockError, before map[txnlock.TxnID][]txnlock.TxnID, earlier map[txnlock.TxnID]bool) error {
	if de.LimitExceeded {
		return errors.New("a search hit a limit")
	}
	if len(de.Cycle) < 2 {
		return fmt.Errorf("a cycle of %d", len(de.Cycle))
	}
	seen := map[txnlock.TxnID]bool{}
	for i, e := range de.Cycle {
		if seen[e.Txn] {
			return fmt.Errorf("t%d twice in the cycle", e.Txn)
		}
		seen[e.Txn] = true
		if earlier[e.Txn] {
			return fmt.Errorf("t%d is in the cycle but was the victim of an earlier one", e.Txn)
		}
		sl := s.byTxn[e.Txn]
		if _, ok := before[e.Txn]; !ok || sl == nil || sl.wait == nil {
			return fmt.Errorf("t%d is in the cycle but did not wait", e.Txn)
		}
		if got := sl.wait.w.Lock; got.CF != e.Lock.CF || got.Mode != e.Lock.Mode || !got.Range.Equal(e.Lock.Range) {
			return fmt.Errorf("t%d waits for %v, the cycle says %v", e.Txn, got, e.Lock)
		}
		next := de.Cycle[(i+1)%len(de.Cycle)].Txn
		if !slices.Contains(e.Blockers, next) {
			return fmt.Errorf("t%d follows t%d in the cycle but is not among its blockers %s", next, e.Txn, txnsString(e.Blockers))
		}
		if !reaches(before, e.Txn, next) {
			return fmt.Errorf("false deadlock: t%d does not truly wait for t%d (truth %v)", e.Txn, next, graphString(before))
		}
	}
	if !seen[de.Victim] {
		return fmt.Errorf("victim t%d is not in the cycle", de.Victim)
	}
	return nil
}

// runLagging runs the goroutine of sl's ended wait: Unblock (Wait's
// deferred call), and for a failed wait leaving the queue
// (pointlock's leaveLocked) and rolling back.
func (s *truthSched) runLagging(sl *truthSlot) error {
	tw := sl.lag
	sl.lag = nil
	s.unblock(tw)
	err := tw.w.Err()
	if err == nil {
		s.logf("t%d's goroutine runs: granted", sl.txn)
		return nil
	}
	s.logf("t%d's goroutine runs: %v; rolls back, holding %d", sl.txn, err, sl.holds.Len())
	l := tw.l
	l.Leave(tw.w)
	s.settle(l)
	s.releaseAll(sl)
	return nil
}

func (s *truthSched) unblock(tw *truthWait) {
	if s.cfg.mutation == mutNoUnblock {
		return
	}
	s.det.unblock(tw.w)
	tw.inDet = false
}

// releaseAll ends sl's transaction (commit or rollback) and starts the
// slot's next one.
func (s *truthSched) releaseAll(sl *truthSlot) {
	sl.holds.ReleaseAll(s.settle)
	delete(s.byTxn, sl.txn)
	s.newTxn(sl)
}

// settle is pointlock's settleLocked: grant what the queue allows, drop
// the Lock once empty.
func (s *truthSched) settle(l *locktable.Lock) {
	cf, key := cfOf(l)
	if l.Queued() > 0 {
		for w := range l.Grants(nil, false) {
			if !w.Claim() {
				continue
			}
			sl := s.byTxn[w.Txn()]
			l.GrantWaiter(w, sl.holds, uint16(cf))
			w.Wake()
			s.logf("  t%d granted %s %s", sl.txn, modeName(w.Lock.Mode), truthKey(cf, key))
			tw := sl.wait
			sl.wait = nil
			if s.rng.IntN(100) < s.cfg.pLag {
				sl.lag = tw
			} else {
				s.unblock(tw)
			}
		}
	}
	if l.Empty() {
		s.tabs[cf].Delete(s.hash(cf, key), l)
	}
}

// Blockers answers the detector for w (lockwait.Source), as pointlock's
// stripe does: the holders of its Lock.
func (s *truthSched) Blockers(w *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	if !w.Active() {
		return dst, false
	}
	return append(dst, s.blockersOf(w.Ext.(*locktable.Lock), w)...), true
}

// LocksHeld answers the detector for the manager (detect.LockCounter).
func (s *truthSched) LocksHeld(txn txnlock.TxnID) int {
	if ts := s.byTxn[txn]; ts != nil {
		return ts.holds.Len()
	}
	return 0
}

// WaitsFor answers the detector for w (lockwait.Source).
func (s *truthSched) WaitsFor(w *lockwait.Waiter, dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	if !w.Active() {
		return dst, false
	}
	l := w.Ext.(*locktable.Lock)
	if s.cfg.mutation == mutWaitsForContracted {
		return append(dst, s.blockersOf(l, w)...), true
	}
	return l.SettledWaitsFor(dst, w), true
}

// blockersOf is what the scheduler answers blocks l for waiter w: its
// holders, unless a mutation says otherwise.
func (s *truthSched) blockersOf(l *locktable.Lock, w *lockwait.Waiter) []txnlock.TxnID {
	var b []txnlock.TxnID
	l.Holders(func(hd *locktable.Holder) bool {
		if s.cfg.mutation != mutBlockersNoUpgrade || hd.Txn() == w.Txn() || !s.upgrading(l, hd.Txn()) {
			b = append(b, hd.Txn())
		}
		return true
	})
	if s.cfg.mutation == mutBlockersAsQueue {
		for q := l.Front(); q != nil; q = q.Next() {
			if q.Active() {
				b = append(b, q.Txn())
			}
		}
	}
	slices.Sort(b)
	return slices.Compact(b)
}

// upgrading reports whether txn waits in l's queue as an upgrade.
func (s *truthSched) upgrading(l *locktable.Lock, txn txnlock.TxnID) bool {
	for q := l.Front(); q != nil; q = q.Next() {
		if q.Txn() == txn && q.Upgrade && q.Active() {
			return true
		}
	}
	return false
}

// truth is the true waits-for graph: whom each queued, active waiter
// waits for once its Lock has settled — every failed waiter gone and the
// queue granted again, as the failed waiters' goroutines are about to make
// it (settledWaitsFor, a plain statement of the rules). A waiter that
// would then be granted waits for the goroutines of the failed waiters
// ahead of it. A waiter that waits for nobody is an error.
func (s *truthSched) truth() (map[txnlock.TxnID][]txnlock.TxnID, error) {
	g := map[txnlock.TxnID][]txnlock.TxnID{}
	for _, sl := range s.slots {
		tw := sl.wait
		if tw == nil || !tw.w.Active() {
			continue
		}
		to := settledWaitsFor(tw.l, tw.w)
		if len(to) == 0 {
			for a := tw.w.Prev(); a != nil; a = a.Prev() {
				if !a.Active() {
					to = append(to, a.Txn())
				}
			}
			if len(to) == 0 {
				return nil, fmt.Errorf("t%d is queued for %s but waits for nobody", sl.txn, tw.l.Key())
			}
		}
		g[sl.txn] = to
	}
	return g, nil
}

// settledWaitsFor is whom w waits for once l has settled, by the rules of
// internal/locktable's doc applied to a copy: drop the ended waiters, then
// in queue order grant each waiter that conflicts with no holder of
// another transaction and, unless it is an upgrade, with no waiter of
// another transaction still waiting ahead of it; w then waits for its
// nearest conflicting waiters ahead, else its conflicting holders
// (internal/waitsfor's rule). Nil if w would be granted.
func settledWaitsFor(l *locktable.Lock, w *lockwait.Waiter) []txnlock.TxnID {
	type holder struct {
		txn  txnlock.TxnID
		mode txnlock.Mode
	}
	var holders []holder
	l.Holders(func(hd *locktable.Holder) bool {
		holders = append(holders, holder{hd.Txn(), hd.Mode()})
		return true
	})
	var waiting []*lockwait.Waiter // ahead of w, still waiting
	for q := l.Front(); q != nil; q = q.Next() {
		if !q.Active() {
			continue
		}
		blocked := false
		for _, h := range holders {
			blocked = blocked || (h.txn != q.Txn() && !h.mode.Compatible(q.Lock.Mode))
		}
		if !q.Upgrade {
			for _, a := range waiting {
				blocked = blocked || (a.Txn() != q.Txn() && !a.Lock.Mode.Compatible(q.Lock.Mode))
			}
		}
		if q == w {
			if !blocked {
				return nil
			}
			break
		}
		if blocked {
			waiting = append(waiting, q)
			continue
		}
		found := false
		for i := range holders {
			if holders[i].txn == q.Txn() {
				holders[i].mode, found = txnlock.Exclusive, true // an upgrade
			}
		}
		if !found {
			holders = append(holders, holder{q.Txn(), q.Lock.Mode})
		}
	}
	var to []txnlock.TxnID
	if !w.Upgrade {
		// The nearest conflicting waiters ahead: the one Exclusive
		// request directly ahead, or the run of Shared requests directly
		// ahead of an Exclusive one.
		for i := len(waiting) - 1; i >= 0; i-- {
			a := waiting[i]
			switch {
			case a.Txn() == w.Txn():
			case a.Lock.Mode == txnlock.Shared && w.Lock.Mode == txnlock.Exclusive:
				to = append(to, a.Txn())
				continue
			case a.Lock.Mode == txnlock.Exclusive && len(to) == 0:
				to = append(to, a.Txn())
			}
			if a.Txn() != w.Txn() && a.Lock.Mode == txnlock.Exclusive {
				break
			}
		}
	}
	if len(to) == 0 {
		for _, h := range holders {
			if h.txn != w.Txn() && !h.mode.Compatible(w.Lock.Mode) {
				to = append(to, h.txn)
			}
		}
	}
	slices.Sort(to)
	return slices.Compact(to)
}

// checkAfterStep is check 2, and the bookkeeping checks.
func (s *truthSched) checkAfterStep() error {
	g, err := s.truth()
	if err != nil {
		return err
	}
	if c := findCycle(g); c != nil {
		return fmt.Errorf("a real cycle is left after the step: %s (truth %s)", txnsString(c), graphString(g))
	}
	if st := s.coreStats(); st.Trips != 0 || st.Deferred != 0 {
		return fmt.Errorf("a search tripped: %v", st)
	}
	if s.step%truthCountEvery != 0 && s.step != s.cfg.steps {
		return nil
	}
	// Stats counts the waits slot by slot: not at every step. It counts
	// every active wait reported, and the ended ones no probe forgot.
	st := s.det.Stats()
	n, active := 0, 0
	for _, sl := range s.slots {
		for _, tw := range []*truthWait{sl.wait, sl.lag} {
			if tw != nil && tw.inDet {
				n++
				if tw.w.Active() {
					active++
				}
			}
		}
	}
	if (st.Waits < active || st.Waits > n) && s.cfg.mutation == mutNone {
		return fmt.Errorf("the detector has %d waits, the harness reported %d not yet Unblocked, %d of them active", st.Waits, n, active)
	}
	return nil
}

// truthCountEvery is how often (in steps) the detector's count of waits
// is compared with the harness's.
const truthCountEvery = 16

// coreStats reads the core's counters, without the count of waits that
// Stats adds.
func (s *truthSched) coreStats() Stats {
	s.det.mu.Lock()
	defer s.det.mu.Unlock()
	return s.det.mu.c.stats
}

// reaches reports whether from waits, transitively, for to in g.
func reaches(g map[txnlock.TxnID][]txnlock.TxnID, from, to txnlock.TxnID) bool {
	seen := map[txnlock.TxnID]bool{from: true}
	stack := []txnlock.TxnID{from}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, n := range g[t] {
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				stack = append(stack, n)
			}
		}
	}
	return false
}

// findCycle returns a cycle of g, or nil.
func findCycle(g map[txnlock.TxnID][]txnlock.TxnID) []txnlock.TxnID {
	const (
		white = iota
		grey
		black
	)
	color := map[txnlock.TxnID]int{}
	var path []txnlock.TxnID
	var visit func(t txnlock.TxnID) []txnlock.TxnID
	visit = func(t txnlock.TxnID) []txnlock.TxnID {
		color[t] = grey
		path = append(path, t)
		for _, n := range g[t] {
			switch color[n] {
			case grey:
				return slices.Clone(path[slices.Index(path, n):])
			case white:
				if c := visit(n); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[t] = black
		return nil
	}
	keys := make([]txnlock.TxnID, 0, len(g))
	for t := range g {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	for _, t := range keys {
		if color[t] == white {
			if c := visit(t); c != nil {
				return c
			}
		}
	}
	return nil
}

func graphString(g map[txnlock.TxnID][]txnlock.TxnID) string {
	keys := make([]txnlock.TxnID, 0, len(g))
	for t := range g {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for i, t := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "t%d→%s", t, txnsString(g[t]))
	}
	return "{" + sb.String() + "}"
}

// txnsString prints transactions as the trace names them: [t1 t2].
func txnsString(ts []txnlock.TxnID) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, t := range ts {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "t%d", t)
	}
	return sb.String() + "]"
}

func cycleString(de *txnlock.DeadlockError) string {
	var sb strings.Builder
	for _, e := range de.Cycle {
		k, _ := e.Lock.Range.PointKey()
		fmt.Fprintf(&sb, "t%d %s %s (blockers %s) → ", e.Txn, modeName(e.Lock.Mode), k, txnsString(e.Blockers))
	}
	return sb.String() + "…"
}

// describe prints every Lock (holders, queue) and every transaction.
func (s *truthSched) describe() string {
	var sb strings.Builder
	for cf := range s.tabs {
		var locks []*locktable.Lock
		s.tabs[cf].All(func(_ uint64, l *locktable.Lock) bool { locks = append(locks, l); return true })
		slices.SortFunc(locks, func(a, b *locktable.Lock) int { return strings.Compare(a.Key(), b.Key()) })
		for _, l := range locks {
			fmt.Fprintf(&sb, "  %s held by", l.Key())
			l.Holders(func(hd *locktable.Holder) bool {
				fmt.Fprintf(&sb, " t%d:%s", hd.Txn(), modeName(hd.Mode()))
				return true
			})
			sb.WriteString("; queue")
			for w := l.Front(); w != nil; w = w.Next() {
				fmt.Fprintf(&sb, " t%d:%s", w.Txn(), modeName(w.Lock.Mode))
				if w.Upgrade {
					sb.WriteString("(upgrade)")
				}
				if !w.Active() {
					sb.WriteString("(ended)")
				}
			}
			sb.WriteString("\n")
		}
	}
	for _, sl := range s.slots {
		fmt.Fprintf(&sb, "  t%d holds %d", sl.txn, sl.holds.Len())
		if sl.wait != nil {
			fmt.Fprintf(&sb, ", waits for %s", sl.wait.l.Key())
		}
		if sl.lag != nil {
			sb.WriteString(", its goroutine lags")
		}
		sb.WriteString("\n")
	}
	if g, err := s.truth(); err == nil {
		fmt.Fprintf(&sb, "  truth %s\n", graphString(g))
	}
	fmt.Fprintf(&sb, "  detector %v\n", s.det.Stats())
	return sb.String()
}

// TestTruthMutations breaks the harness's side of the seam, one way at a
// time, and shows which break TestTruth's checks catch, in the script of
// TestTruthFailedWaiterAhead or in random runs. The breaks that a correct
// detector must survive are expected to pass: a lost Unblock costs memory,
// not correctness (the detector ignores waits that ended); a Check error
// the waiter ignores was delivered anyway (the detector fails the victim
// itself); Blockers that list the queue too make searches longer, and
// confirmation rejects the cycles they invent.
func TestTruthMutations(t *testing.T) {
	for _, tc := range []struct {
		m      truthMutation
		caught bool
	}{
		{mutNoCheck, true},
		{mutNoFail, false},
		{mutBlockersAsQueue, false},
		{mutBlockersNoUpgrade, true},
		{mutWaitsForContracted, true},
		{mutNoUnblock, false},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			// A break that is caught is caught in the first few runs;
			// one that is not runs them all.
			cfg, _ := failedWaiterAheadScript()
			cfg.mutation = tc.m
			first := runTruth(cfg)
			runs := 1
			for s := range uint64(60) {
				if first != nil {
					break
				}
				cfg := truthConfigOf(s+1, 400)
				cfg.mutation = tc.m
				runs++
				if err := runTruth(cfg); err != nil {
					first = fmt.Errorf("seed %d: %w", s+1, err)
					break
				}
			}
			if !tc.caught {
				require.NoError(t, first)
				return
			}
			require.Error(t, first, "%v not caught in %d runs", tc.m, runs)
			msg := first.Error()
			t.Logf("caught after %d runs: %s", runs, msg[:strings.IndexByte(msg, '\n')])
		})
	}
}

// TestTruthFailedWaiterAhead is the shortest script in which the
// contracted graph has a cycle that is not there. Txn 3 waits Shared
// behind txn 2's Exclusive request; txn 2 becomes a victim (of the cycle
// 1 → 2 → 1, the youngest fails), and its goroutine has yet to unlink its
// waiter. Txn 3 now conflicts with nothing but that failed waiter, yet its
// lock's blockers are still the key's holders, txns 1 and 4 (Shared, like
// txn 3). When txn 4 asks for a key txn 3 holds, the search finds 4 → 3 →
// 4, although txn 3 will be granted as soon as txn 2's goroutine leaves
// the queue, whatever txn 4 does. Confirmation asks txn 3's wait whom it
// waits for directly (nobody but the failed request, which is no longer
// waiting), rejects the cycle, and no deadlock is reported.
func TestTruthFailedWaiterAhead(t *testing.T) {
	cfg, tot := failedWaiterAheadScript()
	require.NoError(t, runTruth(cfg))
	require.Equal(t, 1, tot.deadlocks, "the real cycle 1 → 2 → 1")
	require.Equal(t, 1, tot.unconfirmed, "the false one, 4 → 3 → 4")
}

// failedWaiterAheadScript is TestTruthFailedWaiterAhead's run, and its
// totals.
func failedWaiterAheadScript() (truthConfig, *truthTotals) {
	const a, b, c = 0, 1, 2
	S, X := txnlock.Shared, txnlock.Exclusive
	tot := new(truthTotals)
	cfg := truthConfig{
		seed: 1, txns: 4, cfs: 1, keys: 3, pLag: 100, lagFailed: true, victim: VictimYoungest, totals: tot,
		script: []truthOp{
			{0, 0, a, S}, // t1 S a: granted
			{3, 0, a, S}, // t4 S a: granted
			{1, 0, b, X}, // t2 X b: granted
			{2, 0, c, X}, // t3 X c: granted
			{1, 0, a, X}, // t2 X a: waits for t1 t4
			{2, 0, a, S}, // t3 S a: waits for t2
			{0, 0, b, X}, // t1 X b: closes 1 → 2 → 1; victim t2, whose goroutine lags
			{3, 0, c, X}, // t4 X c: waits for t3; the search finds 4 → 3 → 4, not confirmed
		},
	}
	cfg.steps = len(cfg.script)
	return cfg, tot
}
