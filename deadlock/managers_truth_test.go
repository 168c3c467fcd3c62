package deadlock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/manualclock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

var managersRun = flag.Uint64("managers.run", 0, "replay the run of TestTruthManagers with this number, as a failure prints it (0: random runs)")

// TestTruthManagers checks the detector against the true waits-for graph
// as TestTruth does, over the real managers instead of a model of one: a
// pointlock and a rangelock Manager, two column families each, share a
// Detector, and a scheduler on the test's goroutine, drawing every choice
// from the run's number, drives their
// transactions one step at a time. Each Lock call runs on a goroutine of
// its own; a step ends when every call has either returned or sleeps in
// its wait, reported and checked (lockwait.SetTestingParked), so nothing
// moves between steps and a run is a function of its number.
//
// A step is one of: a transaction that does not wait requests a point or,
// in the range manager, a range of two or three keys, Shared or
// Exclusive; such a transaction commits (UnlockAll in both managers) or
// unlocks one lock it took; a waiting request is cancelled (its context);
// a transaction whose request waits makes a second call meanwhile: unlocks
// one lock it took, or requests one more without waiting (a grant to a
// transaction that waits, which may close a cycle with no new wait).
// A request that fails (a deadlock victim, a cancelled wait) rolls its
// transaction back, and the slot goes on with a new transaction.
//
// The truth is read from the managers' Status after every step: a waiter
// waits for the Blockers Status lists, and for every holder of a lock of
// the same manager and column family that overlaps its range in a
// conflicting mode. Each such edge is real, so a cycle among them is a
// real deadlock. The checks:
//  1. after every step no cycle stands: the on-block checks broke every
//     cycle the step closed (the detector runs without its background
//     pass, so a missed cycle stays);
//  2. every waiter waits for someone (no lost wake-up), and the
//     detector's count of waits is the number of sleeping calls;
//  3. every cycle the detector confirms is real when it is confirmed
//     (Detector.testingOnConfirm, before the victim is failed): each member
//     waits for the lock its entry names, and reaches the next member in
//     the true graph, or has it queued since earlier on a conflicting,
//     overlapping range (Status's nearest-request rule names the request
//     directly ahead on each part of a range, which may itself wait for
//     something else). A report met while an earlier victim of the same
//     step has yet to leave its queue is counted, not checked.
//
// A failure prints the run's number; -managers.run N replays it. -long
// runs many more.
func TestTruthManagers(t *testing.T) {
	runs, steps := 40, 300
	if *long {
		runs, steps = 3_000, 1_000
	}
	if *managersRun != 0 {
		runs = 1
	}
	var tot managersTotals
	for range runs {
		run := *managersRun
		if run == 0 {
			run = rand.Uint64()
		}
		if err := runManagersTruth(t, run, steps, &tot); err != nil {
			t.Fatalf("run %d (-managers.run %d replays it): %v", run, run, err)
		}
	}
	t.Logf("%d runs: %+v", runs, tot)
	// The runs must have met what they test.
	require.Positive(t, tot.waits)
	require.Positive(t, tot.deadlocks)
	require.Positive(t, tot.rangeDeadlocks, "cycles through a range wait")
}

// managersTotals sums what the runs did.
type managersTotals struct {
	requests, waits, deadlocks, rangeDeadlocks, cancels, commits, unlocks, transient int
	// resettled counts steps settled again because a call moved while
	// the checks read the managers.
	resettled int
}

// mtLock is a lock a slot's transaction took: in manager m (0 point, 1
// range).
type mtLock struct {
	m  int
	cf txnlock.ColumnFamily
	r  txnlock.Range
}

// mtCall is a Lock call in flight.
type mtCall struct {
	m      int
	req    txnlock.Request
	cancel context.CancelFunc
	done   chan error
}

type mtSlot struct {
	txn  txnlock.TxnID
	held []mtLock
	call *mtCall
}

type mtSched struct {
	rng   *rand.Rand
	det   *Detector
	ms    [2]txnlock.Manager
	slots []*mtSlot
	keys  int
	pX    int
	next  txnlock.TxnID
	tot   *managersTotals
	step  int
	trace []string

	// mu guards parked, whom the parked hook saw sleep, and victims, the
	// transactions failed as victims during the current step, and
	// problems, what check 3 found.
	mu       sync.Mutex
	parked   map[txnlock.TxnID]*lockwait.Waiter
	victims  map[txnlock.TxnID]bool
	problems []string
	woken    chan struct{}
}

func runManagersTruth(t *testing.T, run uint64, steps int, tot *managersTotals) (err error) {
	rng := rand.New(rand.NewPCG(run, 3))
	victim := [...]Victim{VictimRequester, VictimRequester, VictimYoungest, VictimFewestLocks}[rng.IntN(4)]
	det, err := newDetector(Options{Clock: manualclock.New(), Victim: victim}, false)
	require.NoError(t, err)
	pm, rm := sharingManagers(t, det)
	for _, m := range []txnlock.Manager{pm, rm} {
		require.NoError(t, m.AddColumnFamily(1))
	}
	s := &mtSched{
		rng:     rng,
		det:     det,
		ms:      [2]txnlock.Manager{pm, rm},
		keys:    2 + rng.IntN(5),
		pX:      30 + rng.IntN(61),
		tot:     tot,
		parked:  map[txnlock.TxnID]*lockwait.Waiter{},
		victims: map[txnlock.TxnID]bool{},
		woken:   make(chan struct{}, 1),
	}
	for range 2 + rng.IntN(9) {
		s.next++
		s.slots = append(s.slots, &mtSlot{txn: s.next})
	}
	restore := lockwait.SetTestingParked(func(w *lockwait.Waiter, sleeps bool) {
		s.mu.Lock()
		if sleeps {
			s.parked[w.Txn()] = w
		} else {
			delete(s.parked, w.Txn())
		}
		s.mu.Unlock()
		s.wake()
	})
	det.testingOnConfirm = s.onConfirm
	det.testingOnBreak = func(de *txnlock.DeadlockError) {
		s.mu.Lock()
		s.victims[de.Victim] = true
		s.mu.Unlock()
	}
	defer func() {
		// End every transaction, so that every call returns.
		for _, sl := range s.slots {
			if sl.call != nil {
				sl.call.cancel()
			}
		}
		for _, sl := range s.slots {
			if sl.call != nil {
				<-sl.call.done
			}
			s.rollback(sl)
		}
		restore()
		require.NoError(t, pm.Close())
		require.NoError(t, rm.Close())
		require.NoError(t, det.Close())
		if err != nil {
			lo := max(0, len(s.trace)-40)
			err = fmt.Errorf("%w\nvictim=%v keys=%d x=%d%% slots=%d\nlast steps:\n%s", err, victim, s.keys, s.pX, len(s.slots),
				strings.Join(s.trace[lo:], "\n"))
		}
	}()
	for step := 1; step <= steps; step++ {
		s.step = step
		s.doStep()
		for {
			if err := s.settle(); err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			err := s.check()
			if s.stillSettled() {
				if err != nil {
					return fmt.Errorf("step %d: %w", step, err)
				}
				break
			}
			// A call moved while the checks read the managers: they
			// may have read a moment between two states. Settle again.
			s.tot.resettled++
		}
	}
	st := det.Stats()
	if st.Trips != 0 {
		return fmt.Errorf("%d searches tripped", st.Trips)
	}
	return nil
}

// sharingManagers returns a point and a range manager whose waits share
// det and last until granted or failed.
func sharingManagers(t *testing.T, det *Detector) (*pointlock.Manager, *rangelock.Manager) {
	wo := txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}
	pm, err := pointlock.New(pointlock.Options{WaitOptions: wo})
	require.NoError(t, err)
	rm, err := rangelock.New(rangelock.Options{WaitOptions: wo})
	require.NoError(t, err)
	return pm, rm
}

func (s *mtSched) wake() {
	select {
	case s.woken <- struct{}{}:
	default:
	}
}

func (s *mtSched) logf(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("%4d  ", s.step)+fmt.Sprintf(format, args...))
}

func (s *mtSched) key(k int) []byte { return []byte{'k', byte('a' + k)} }

// doStep takes one random step.
func (s *mtSched) doStep() {
	sl := s.slots[s.rng.IntN(len(s.slots))]
	if sl.call != nil {
		switch r := s.rng.IntN(16); {
		case r < 2:
			s.logf("cancel the wait of T%d", sl.txn)
			s.tot.cancels++
			sl.call.cancel()
			s.finish(sl, <-sl.call.done) // a cancel is not seen at once
		case r == 2:
			if len(sl.held) > 0 {
				s.unlockOne(sl)
			}
		case r == 3:
			m, req := s.request(sl)
			req.Timeout = txnlock.NoWait
			s.logf("T%d, waiting, requests %v %v in cf %d of manager %d, no wait", sl.txn, req.Mode, req.Range, req.CF, m)
			s.tot.requests++
			if err := s.ms[m].Lock(context.Background(), req); err == nil {
				sl.held = append(sl.held, mtLock{m: m, cf: req.CF, r: req.Range})
			}
		}
		return
	}
	switch p := s.rng.IntN(100); {
	case p < 10:
		s.logf("T%d commits", sl.txn)
		s.tot.commits++
		s.rollback(sl)
	case p < 18 && len(sl.held) > 0:
		s.unlockOne(sl)
	default:
		m, req := s.request(sl)
		s.logf("T%d requests %v %v in cf %d of manager %d", sl.txn, req.Mode, req.Range, req.CF, m)
		s.tot.requests++
		ctx, cancel := context.WithCancel(context.Background())
		c := &mtCall{m: m, req: req, cancel: cancel, done: make(chan error, 1)}
		sl.call = c
		s.mu.Lock()
		delete(s.parked, sl.txn)
		s.mu.Unlock()
		go func() {
			c.done <- s.ms[m].Lock(ctx, req)
			s.wake()
		}()
	}
}

// unlockOne unlocks one of the locks sl's transaction took.
func (s *mtSched) unlockOne(sl *mtSlot) {
	i := s.rng.IntN(len(sl.held))
	l := sl.held[i]
	s.logf("T%d unlocks %v in cf %d of manager %d", sl.txn, l.r, l.cf, l.m)
	s.tot.unlocks++
	err := s.ms[l.m].Unlock(sl.txn, l.cf, l.r)
	if err != nil && !errors.Is(err, txnlock.ErrNotHeld) {
		s.problem("unlock: %v", err)
	}
	sl.held = slices.Delete(sl.held, i, i+1)
}

// request draws a request of sl's transaction: a point or, in the range
// manager (m 1), a range of two or three keys, Shared or Exclusive.
func (s *mtSched) request(sl *mtSlot) (m int, req txnlock.Request) {
	req = txnlock.Request{Txn: sl.txn, CF: txnlock.ColumnFamily(s.rng.IntN(2)), Mode: txnlock.Shared}
	if s.rng.IntN(100) < s.pX {
		req.Mode = txnlock.Exclusive
	}
	m = s.rng.IntN(2)
	k := s.rng.IntN(s.keys)
	req.Range = txnlock.Point(s.key(k))
	if m == 1 && s.rng.IntN(2) == 0 {
		r, err := txnlock.Inclusive(s.key(k), s.key(k+1+s.rng.IntN(2)))
		if err == nil {
			req.Range = r
		}
	}
	return m, req
}

// rollback ends sl's transaction in both managers; the slot goes on with
// a new one.
func (s *mtSched) rollback(sl *mtSlot) {
	for _, m := range s.ms {
		if err := m.UnlockAll(sl.txn); err != nil {
			s.problem("unlock all: %v", err)
		}
	}
	s.next++
	sl.txn, sl.held = s.next, sl.held[:0]
}

func (s *mtSched) problem(format string, args ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// settle waits until every call has returned or sleeps in a wait that is
// still active, handling the calls that returned. Nothing then moves
// until the next step: waits last forever, and the detector fails
// victims only inside a call that has not gone to sleep yet.
//
// Every change it waits for wakes it (s.wake): a call that returns, and a
// waiter's goroutine that goes to sleep or leaves Wait. A step that
// neither returns nor sleeps within a minute fails.
func (s *mtSched) settle() error {
	stuck := time.NewTimer(time.Minute)
	defer stuck.Stop()
	for {
		busy, finished := false, false
		for _, sl := range s.slots {
			c := sl.call
			if c == nil {
				continue
			}
			select {
			case err := <-c.done:
				s.finish(sl, err)
				busy, finished = true, true // a rollback may have granted others
				continue
			default:
			}
			s.mu.Lock()
			w := s.parked[sl.txn]
			s.mu.Unlock()
			if w == nil || !w.Active() {
				busy = true // not asleep yet, or woken and on its way out
			}
		}
		if !busy {
			s.mu.Lock()
			clear(s.victims)
			s.mu.Unlock()
			return nil
		}
		if finished {
			continue
		}
		select {
		case <-s.woken:
		case <-stuck.C:
			return errors.New("the step does not settle: a call neither returns nor sleeps")
		}
	}
}

// stillSettled reports whether every call that settle left asleep still
// sleeps in an active wait.
func (s *mtSched) stillSettled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		if c := sl.call; c != nil {
			if w := s.parked[sl.txn]; len(c.done) > 0 || w == nil || !w.Active() {
				return false
			}
		}
	}
	return true
}

// finish takes the outcome of sl's call.
func (s *mtSched) finish(sl *mtSlot, err error) {
	c := sl.call
	sl.call = nil
	c.cancel()
	s.mu.Lock()
	delete(s.parked, sl.txn)
	s.mu.Unlock()
	if err != nil {
		s.logf("    T%d fails: %v", sl.txn, err)
	}
	switch {
	case err == nil:
		sl.held = append(sl.held, mtLock{m: c.m, cf: c.req.CF, r: c.req.Range})
		return
	case errors.Is(err, txnlock.ErrDeadlock):
		s.tot.deadlocks++
		var de *txnlock.DeadlockError
		if errors.As(err, &de) && slices.ContainsFunc(de.Cycle, func(e txnlock.CycleEntry) bool {
			_, point := e.Lock.Range.PointKey()
			return !point
		}) {
			s.tot.rangeDeadlocks++
		}
	case errors.Is(err, context.Canceled):
	default:
		s.problem("T%d's request %v: %v", sl.txn, c.req, err)
	}
	s.rollback(sl)
}

// truth is the waits-for graph read from the managers' Status, and the
// waits Status shows, each with its manager.
func (s *mtSched) truth() (map[txnlock.TxnID][]txnlock.TxnID, []mtWait) {
	return statusTruth(s.ms[:]...)
}

// statusTruth is the waits-for graph read from the managers' Status (each
// waiter waits for its Blockers, and for the holders of the locks of its
// manager and column family that overlap its range in a conflicting
// mode), and the waits Status shows, each with the index of its manager.
func statusTruth(ms ...txnlock.Manager) (map[txnlock.TxnID][]txnlock.TxnID, []mtWait) {
	g := map[txnlock.TxnID][]txnlock.TxnID{}
	var waits []mtWait
	for mi, m := range ms {
		st := m.Status()
		for _, w := range st.Waits {
			waits = append(waits, mtWait{m: mi, w: w})
			g[w.Txn] = append(g[w.Txn], w.Blockers...)
			for _, l := range st.Locks {
				if l.CF == w.CF && l.Range.Overlaps(w.Range) && !l.Mode.Compatible(w.Mode) {
					for _, h := range l.Holders {
						if h != w.Txn {
							g[w.Txn] = append(g[w.Txn], h)
						}
					}
				}
			}
			if len(g[w.Txn]) == 0 {
				g[w.Txn] = nil // a waiter for nobody: check reports it
			}
		}
	}
	return g, waits
}

// mtWait is a wait Status shows, in manager m.
type mtWait struct {
	m int
	w txnlock.WaitStatus
}

// check runs checks 1 and 2 once a step has settled, and reports what
// check 3 found during it.
func (s *mtSched) check() error {
	s.mu.Lock()
	problems := s.problems
	s.problems = nil
	s.mu.Unlock()
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	g, waits := s.truth()
	sleeping := 0
	for _, sl := range s.slots {
		if sl.call == nil {
			continue
		}
		sleeping++
		if !slices.ContainsFunc(waits, func(w mtWait) bool { return w.w.Txn == sl.txn && w.m == sl.call.m }) {
			s.mu.Lock()
			w := s.parked[sl.txn]
			s.mu.Unlock()
			return fmt.Errorf("T%d's request %v sleeps (parked %v, active %v), and Status does not show it\n%s", sl.txn, sl.call.req, w != nil, w != nil && w.Active(), s.describe())
		}
	}
	s.tot.waits += sleeping
	if len(waits) != sleeping {
		return fmt.Errorf("Status shows %d waits, %d calls sleep", len(waits), sleeping)
	}
	for txn, to := range g {
		if len(to) == 0 {
			return fmt.Errorf("T%d waits for nobody: %s\n%s", txn, graphString(g), s.describe())
		}
	}
	if c := findCycle(g); c != nil {
		return fmt.Errorf("a real cycle stands: %s; graph %s\n%s", txnsString(c), graphString(g), s.describe())
	}
	if n := s.det.Stats().Waits; n != sleeping {
		return fmt.Errorf("the detector counts %d waits, %d calls sleep", n, sleeping)
	}
	return nil
}

// describe renders both managers' Status and the detector's counters.
func (s *mtSched) describe() string {
	return fmt.Sprintf("point manager:\n%v\nrange manager:\n%v\ndetector: %v", s.ms[0].Status(), s.ms[1].Status(), s.det.Stats())
}

// onConfirm is check 3: de's cycle, confirmed and about to be broken
// (under the detector's mutex, inside a call that has not gone to sleep),
// is in the true graph.
func (s *mtSched) onConfirm(de *txnlock.DeadlockError) {
	g, waits := s.truth()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range de.Cycle {
		at := slices.IndexFunc(waits, func(w mtWait) bool {
			return w.w.Txn == e.Txn && w.w.CF == e.Lock.CF && w.w.Mode == e.Lock.Mode && w.w.Range.Equal(e.Lock.Range)
		})
		if at < 0 {
			s.problems = append(s.problems, fmt.Sprintf("%v: T%d does not wait for %v", de, e.Txn, e.Lock))
			return
		}
		next := de.Cycle[(i+1)%len(de.Cycle)].Txn
		if reaches(g, e.Txn, next) || queuedEarlier(waits, waits[at], next) {
			continue
		}
		if len(s.victims) > 0 {
			s.tot.transient++
			return
		}
		s.problems = append(s.problems, fmt.Sprintf("%v: T%d does not wait for T%d; graph %s", de, e.Txn, next, graphString(g)))
		return
	}
}

// queuedEarlier reports whether next waits, since no later than w, in w's
// manager and column family, for a range that overlaps w's in a
// conflicting mode.
func queuedEarlier(waits []mtWait, w mtWait, next txnlock.TxnID) bool {
	return slices.ContainsFunc(waits, func(o mtWait) bool {
		return o.w.Txn == next && o.m == w.m && o.w.CF == w.w.CF && o.w.Range.Overlaps(w.w.Range) &&
			!o.w.Mode.Compatible(w.w.Mode) && !o.w.Since.After(w.w.Since)
	})
}
