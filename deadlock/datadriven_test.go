package deadlock

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestScenarios runs the scenario files in testdata/detector against a Detector
// whose background goroutine is not started: a background pass runs only
// when a scenario says "background", and time moves only with "advance"
// (or by "tick" per clock read, to make a search run out of time).
//
// The locks are those of a tiny manager the scenario owns: a lock is a
// name and its blockers (the "blockers" command sets them), and a waiter
// answers the detector's questions from them when it is asked, as a
// manager answers from its live lock table: Blockers is its lock's
// blockers now, and WaitsFor the same without its own transaction, unless
// a "waitsfor" command set its exact direct list (a request queued ahead
// of it, say). "block" reports a wait with the stamp a manager would have
// taken where it queued it (stamp=N), or none (the detector takes the
// next).
//
// Commands:
//
//	new [detection=on-block|background|off] [depth=N] [steps=N] [time=D] [breaker=defer|assume]
//	    [victim=requester|youngest|fewest-locks|priority] [prio=(1:5,..)]
//	    [history=N] [tick=D] [delay=D]
//	blockers res=R txns=(T,..) | from=T to=T
//	block txn=T res=R [key=K] [mode=S|X] [cf=N] [locks=N] [stamp=N] [w=NAME]
//	waitsfor txn=T [w=NAME] txns=(T,..)
//	check txn=T [w=NAME]         unblock txn=T [w=NAME]
//	grant txn=T [w=NAME]         timeout txn=T [w=NAME]
//	background [unblock=(NAME,..)] [timeout=(NAME,..)]
//	chain from=T n=N [cycle]     queue res=R from=T n=N [fifo]
//	advance D    history [report]    report    stats    graph
//
// graph lists the registered waits, ended ones too, with what their
// waiters answer now.
type scenario struct {
	t     *testing.T
	clock *steppingClock
	d     *Detector
	locks map[string]*fakeLock
	// waiters by name ("t1" unless a block says w=...), and the names in
	// creation order so that failures print in a stable order.
	waiters map[string]*fakeWaiter
	order   []string
	lastErr *txnlock.DeadlockError
	// asked counts the questions the waiters answered (Blockers and
	// WaitsFor).
	asked int
	// held is what the scenario's manager says each transaction holds
	// (block's locks=N).
	held heldLocks
}

// fakeLock is a lock of the scenario's manager: whom it is blocked by.
type fakeLock struct {
	name     string
	blockers []txnlock.TxnID
}

// fakeWaiter is a detect.Waiter queued on a fakeLock, which remembers the
// error it was failed with. Scenario tests are single-goroutine.
type fakeWaiter struct {
	s        *scenario
	name     string
	txn      txnlock.TxnID
	lock     *fakeLock
	waitsFor []txnlock.TxnID // with exact: whom it waits for directly
	exact    bool
	err      error
	granted  bool
	reported bool
	ref      txnlock.LockRef
	since    time.Time
}

// Requested answers what block was given (detect.Waiter).
func (w *fakeWaiter) Requested() (txnlock.LockRef, time.Time) { return w.ref, w.since }

// Regranted is always true: Block asks the waiter (detect.Waiter).
func (w *fakeWaiter) Regranted() bool { return true }

// Active says whether the waiter still waits, as lockwait.Waiter does.
func (w *fakeWaiter) Active() bool { return w.err == nil && !w.granted }

func (w *fakeWaiter) Txn() txnlock.TxnID { return w.txn }

func (w *fakeWaiter) Fail(err error) bool {
	if w.err != nil || w.granted {
		return false
	}
	w.err = err
	return true
}

// Blockers answers its lock's blockers as they are now, or false once the
// wait is over.
func (w *fakeWaiter) Blockers(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	w.s.asked++
	if !w.Active() {
		return dst, false
	}
	return append(dst, w.lock.blockers...), true
}

// WaitsFor answers the exact list a waitsfor command set, or else its
// lock's blockers but its own transaction; false once the wait is over.
func (w *fakeWaiter) WaitsFor(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	w.s.asked++
	if !w.Active() {
		return dst, false
	}
	if w.exact {
		return append(dst, w.waitsFor...), true
	}
	for _, b := range w.lock.blockers {
		if b != w.txn {
			dst = append(dst, b)
		}
	}
	return dst, true
}

// steppingClock is a manual clock that can also advance by tick on every
// Now, so that a search sees time pass while it runs.
type steppingClock struct {
	*manualclock.Clock
	tick time.Duration
}

func (c *steppingClock) Now() time.Time {
	if c.tick > 0 {
		c.Advance(c.tick)
	}
	return c.Clock.Now()
}

func TestScenarios(t *testing.T) {
	ddtest.Walk(t, "testdata/detector", func(t *testing.T, path string) {
		s := &scenario{t: t}
		s.reset(Options{})
		defer func() { require.NoError(t, s.d.Close()) }()
		datadriven.RunTest(t, path, s.run)
	})
}

func (s *scenario) reset(opts Options) {
	if s.d != nil {
		require.NoError(s.t, s.d.Close())
	}
	s.clock = &steppingClock{Clock: manualclock.New(), tick: s.clock.tickOr0()}
	opts.Clock = s.clock
	d, err := newDetector(opts, false)
	require.NoError(s.t, err)
	s.d = d
	s.locks = map[string]*fakeLock{}
	s.waiters = map[string]*fakeWaiter{}
	s.order = nil
	s.lastErr = nil
	s.held = heldLocks{}
	d.Seam().Attach(s.held)
}

func (c *steppingClock) tickOr0() time.Duration {
	if c == nil {
		return 0
	}
	return c.tick
}

// lock returns the lock named name, without blockers if it is new.
func (s *scenario) lock(name string) *fakeLock {
	l, ok := s.locks[name]
	if !ok {
		l = &fakeLock{name: name}
		s.locks[name] = l
	}
	return l
}

// waiter returns the waiter a command names (txn=T [w=NAME]).
func (s *scenario) waiter(t *testing.T, d *datadriven.TestData) *fakeWaiter {
	w := s.waiters[waiterName(t, d, scanTxn(t, d))]
	require.NotNil(t, w, "unknown waiter")
	return w
}

// txnList returns the transactions of key (k=(1,2,..)), and whether key
// is there at all: k=() is an empty list.
func txnList(t *testing.T, d *datadriven.TestData, key string) ([]txnlock.TxnID, bool) {
	if !d.HasArg(key) {
		return nil, false
	}
	var txns []txnlock.TxnID
	for _, v := range argList(d, key) {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
		txns = append(txns, txnlock.TxnID(n))
	}
	return txns, true
}

func scanTxn(t *testing.T, d *datadriven.TestData) txnlock.TxnID {
	var n uint64
	d.ScanArgs(t, "txn", &n)
	return txnlock.TxnID(n)
}

func waiterName(t *testing.T, d *datadriven.TestData, txn txnlock.TxnID) string {
	name := fmt.Sprintf("t%d", uint64(txn))
	d.MaybeScanArgs(t, "w", &name)
	return name
}

// argList returns the values of key, split on commas as well.
func argList(d *datadriven.TestData, key string) []string {
	arg, ok := d.Arg(key)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range arg.Vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	s.t = t
	var out strings.Builder
	switch d.Cmd {
	case "new":
		s.cmdNew(t, d)
	case "block":
		txn := scanTxn(t, d)
		var res string
		d.ScanArgs(t, "res", &res)
		key, mode, cf, locks, stamp := res, "X", 0, 0, uint64(0)
		d.MaybeScanArgs(t, "key", &key)
		d.MaybeScanArgs(t, "mode", &mode)
		d.MaybeScanArgs(t, "cf", &cf)
		d.MaybeScanArgs(t, "locks", &locks)
		d.MaybeScanArgs(t, "stamp", &stamp)
		before := s.d.Stats()
		if _, needsCheck := s.block(waiterName(t, d, txn), txn, res, key, mode, cf, locks, stamp, d.HasArg("mayskip")); needsCheck {
			out.WriteString("needs check\n")
		}
		if s.d.Stats().Searches != before.Searches {
			// The Block searched itself (a transaction's earlier wait
			// was left unsearched as lone).
			s.printChange(&out, before, true)
		}
	case "stamp":
		// A manager queues a wait somewhere and takes the next stamp.
		fmt.Fprintf(&out, "stamp %d\n", s.d.stamps.Add(1))
	case "blockers":
		var res string
		d.ScanArgs(t, "res", &res)
		var txns []txnlock.TxnID
		var from, to int
		if d.MaybeScanArgs(t, "from", &from) {
			d.ScanArgs(t, "to", &to)
			for i := from; i <= to; i++ {
				txns = append(txns, txnlock.TxnID(i))
			}
		}
		list, _ := txnList(t, d, "txns")
		s.lock(res).blockers = append(txns, list...)
	case "waitsfor":
		w := s.waiter(t, d)
		list, ok := txnList(t, d, "txns")
		require.True(t, ok, "waitsfor wants txns=(..)")
		w.waitsFor, w.exact = list, true
	case "unblock":
		// The waiter's goroutine reports the end of its wait. If its
		// transaction waits elsewhere too, the detector searches from
		// there: the searches show.
		w := s.waiter(t, d)
		before := s.d.Stats()
		s.d.unblock(w)
		s.printChange(&out, before, true)
	case "grant":
		// The manager grants the waiter, which wakes; its Unblock has
		// not reached the detector yet.
		s.waiter(t, d).granted = true
	case "timeout":
		// The waiter's own timeout fires: it fails, and its goroutine has
		// not yet Unblocked it.
		w := s.waiter(t, d)
		w.Fail(txnlock.ErrLockTimeout)
		w.reported = true
	case "check":
		w := s.waiter(t, d)
		before := s.d.Stats()
		err := s.d.check(w, w.Txn())
		if err != nil {
			// The detector failed the requester's waiter itself, with the
			// error Check returns.
			require.Equal(t, err, w.err, "the requester's waiter is failed with Check's error")
			w.reported = true
			fmt.Fprintf(&out, "%s: %v\n", w.name, err)
			s.lastErr = asDeadlock(t, err)
		} else {
			fmt.Fprintf(&out, "%s: waits\n", w.name)
		}
		s.printChange(&out, before, false)
	case "background":
		// With unblock=(NAME,..), those waits are granted and Unblocked
		// between the snapshot and its search; with timeout=(NAME,..),
		// they time out then (and stay registered).
		before := s.d.Stats()
		gone, timedOut := argList(d, "unblock"), argList(d, "timeout")
		s.d.testingAfterSnapshot = func() {
			for _, name := range gone {
				w := s.waiters[name]
				require.NotNil(t, w, "unknown waiter %s", name)
				w.granted = true
				s.d.unblock(w)
			}
			for _, name := range timedOut {
				w := s.waiters[name]
				require.NotNil(t, w, "unknown waiter %s", name)
				w.Fail(txnlock.ErrLockTimeout)
				w.reported = true
			}
		}
		s.d.takePassWish() // as the background goroutine does before a pass
		s.d.backgroundPass()
		s.d.testingAfterSnapshot = nil
		s.printChange(&out, before, false)
	case "chain":
		s.cmdChain(t, d)
	case "queue":
		s.cmdQueue(t, d, &out)
	case "advance":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		require.NoError(t, err)
		s.clock.Advance(dur)
	case "history":
		if len(s.d.History()) == 0 {
			out.WriteString("(empty)\n")
		}
		for i, e := range s.d.History() {
			fmt.Fprintf(&out, "%d: %s %v\n", i+1, e.Time.Format("15:04:05.000"), e)
			if d.HasArg("report") {
				out.WriteString(e.Report())
			}
		}
	case "report":
		require.NotNil(t, s.lastErr, "no deadlock yet")
		out.WriteString(s.lastErr.Report())
	case "stats":
		fmt.Fprintln(&out, s.d.Stats())
	case "graph":
		out.WriteString(s.d.reg.describe())
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	if out.Len() == 0 {
		return "ok\n"
	}
	return out.String()
}

func asDeadlock(t *testing.T, err error) *txnlock.DeadlockError {
	de, ok := err.(*txnlock.DeadlockError)
	require.True(t, ok, "want a *DeadlockError, got %T", err)
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	return de
}

// block queues a waiter of txn on lock res and reports its wait; it
// returns the waiter and whether Block asked for a Check.
func (s *scenario) block(name string, txn txnlock.TxnID, res, key, mode string, cf, locks int, stamp uint64, maySkip bool) (*fakeWaiter, bool) {
	m := txnlock.Exclusive
	if mode == "S" {
		m = txnlock.Shared
	}
	l := s.lock(res)
	w := &fakeWaiter{s: s, name: name, txn: txn, lock: l,
		ref:   txnlock.LockRef{CF: txnlock.ColumnFamily(cf), Range: txnlock.Point([]byte(key)), Mode: m},
		since: s.clock.Clock.Now(),
	}
	s.held[txn] = locks
	if _, ok := s.waiters[name]; !ok {
		s.order = append(s.order, name)
	}
	s.waiters[name] = w
	needsCheck := s.d.block(detect.Edge{Waiter: w, Stamp: stamp, MaySkip: maySkip})
	return w, needsCheck
}

// printChange prints the waiters failed since the last command, the
// counters that moved, and whether a background pass is wanted (a search
// deferred or not confirmed, or a Check with Background detection): it
// takes the wish, as the background goroutine does when woken.
// With searches, it prints the searches run too.
func (s *scenario) printChange(out *strings.Builder, before Stats, searches bool) {
	for _, name := range s.order {
		w := s.waiters[name]
		if w.err != nil && !w.reported {
			w.reported = true
			fmt.Fprintf(out, "failed %s: %v\n", name, w.err)
			s.lastErr = asDeadlock(s.t, w.err)
		}
	}
	after := s.d.Stats()
	var moved []string
	add := func(name string, a, b uint64) {
		if a != b {
			moved = append(moved, fmt.Sprintf("%s+%d", name, b-a))
		}
	}
	if searches {
		add("searches", before.Searches, after.Searches)
	}
	add("trips", before.Trips, after.Trips)
	add("deferred", before.Deferred, after.Deferred)
	add("assumed", before.Assumed, after.Assumed)
	add("deadlocks", before.Deadlocks, after.Deadlocks)
	add("false_positives_avoided", before.FalsePositivesAvoided, after.FalsePositivesAvoided)
	if len(moved) > 0 {
		fmt.Fprintf(out, "stats: %s\n", strings.Join(moved, " "))
	}
	// The background goroutine would take the wish when woken.
	if s.d.takePassWish() {
		out.WriteString("pass wanted\n")
	}
}

func (s *scenario) cmdNew(t *testing.T, d *datadriven.TestData) {
	o, tick := parseOptions(t, d)
	s.clock = nil
	s.reset(o)
	s.clock.tick = tick
}

// parseOptions reads a new command's options, and the clock's tick per
// read (tick=D).
func parseOptions(t *testing.T, d *datadriven.TestData) (Options, time.Duration) {
	var o Options
	if d.HasArg("detection") {
		var m string
		d.ScanArgs(t, "detection", &m)
		o.Detection = map[string]Detection{"on-block": OnBlock, "background": Background, "off": Off}[m]
	}
	d.MaybeScanArgs(t, "depth", &o.MaxDepth)
	d.MaybeScanArgs(t, "steps", &o.MaxSteps)
	d.MaybeScanArgs(t, "history", &o.HistorySize)
	var dur string
	if d.MaybeScanArgs(t, "time", &dur) {
		v, err := time.ParseDuration(dur)
		require.NoError(t, err)
		o.MaxSearchTime = v
	}
	if d.MaybeScanArgs(t, "delay", &dur) {
		v, err := time.ParseDuration(dur)
		require.NoError(t, err)
		o.DetectDelay = v
	}
	var tick time.Duration
	if d.MaybeScanArgs(t, "tick", &dur) {
		v, err := time.ParseDuration(dur)
		require.NoError(t, err)
		tick = v
	}
	var b string
	if d.MaybeScanArgs(t, "breaker", &b) {
		o.Breaker = map[string]Breaker{"defer": Defer, "assume": AssumeDeadlock}[b]
	}
	var v string
	if d.MaybeScanArgs(t, "victim", &v) {
		p, ok := map[string]Victim{"requester": VictimRequester, "youngest": VictimYoungest,
			"fewest-locks": VictimFewestLocks, "priority": VictimPriority}[v]
		require.True(t, ok, "unknown victim %q", v)
		o.Victim = p
	}
	if list := argList(d, "prio"); list != nil {
		prio := map[txnlock.TxnID]int64{}
		for _, kv := range list {
			k, val, ok := strings.Cut(kv, ":")
			require.True(t, ok, "prio wants txn:priority")
			id, err := strconv.ParseUint(k, 10, 64)
			require.NoError(t, err)
			p, err := strconv.ParseInt(val, 10, 64)
			require.NoError(t, err)
			prio[txnlock.TxnID(id)] = p
		}
		o.Priority = func(id txnlock.TxnID) int64 { return prio[id] }
	}
	return o, tick
}

// cmdChain makes txns from..from+n-1 each wait for a lock (c<i>) held by
// the next; with "cycle" the last waits for the first. The waits are
// reported without checks.
func (s *scenario) cmdChain(t *testing.T, d *datadriven.TestData) {
	var from, n int
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "n", &n)
	// Blockers first: a manager knows a lock's holders when it queues a
	// waiter.
	for i := range n {
		next := txnlock.TxnID(from + i + 1)
		if i == n-1 {
			if !d.HasArg("cycle") {
				continue
			}
			next = txnlock.TxnID(from)
		}
		s.lock(fmt.Sprintf("c%d", from+i)).blockers = []txnlock.TxnID{next}
	}
	for i := range n {
		res := fmt.Sprintf("c%d", from+i)
		s.block(fmt.Sprintf("t%d", from+i), txnlock.TxnID(from+i), res, res, "X", 0, 1, 0, false)
	}
}

// cmdQueue queues txns from..from+n-1 on res, in that order, and prints
// how many Blocks asked for a Check. Then, to show what a search would
// cost, it checks every waiter anyway as it is queued, and prints how many
// were failed, what the searches cost in steps, and how many questions
// (Blockers, WaitsFor) the most curious one asked the waiters. With fifo,
// each waiter's exact list names the waiter just ahead of it (the first:
// the lock's blockers), as in a queue of Exclusive requests.
func (s *scenario) cmdQueue(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	var from, n int
	var res string
	d.ScanArgs(t, "res", &res)
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "n", &n)
	before := s.d.Stats()
	failed, needed := 0, 0
	maxSteps := uint64(0)
	maxAsked := 0
	ahead := slices.Clone(s.lock(res).blockers)
	for i := range n {
		txn := txnlock.TxnID(from + i)
		w, needsCheck := s.block(fmt.Sprintf("t%d", from+i), txn, res, res, "X", 0, 0, 0, false)
		if d.HasArg("fifo") {
			w.waitsFor, w.exact = ahead, true
			ahead = []txnlock.TxnID{txn}
		}
		if needsCheck {
			needed++
		}
		st, asked := s.d.Stats().Steps, s.asked
		if err := s.d.check(w, w.Txn()); err != nil {
			failed++
		}
		maxSteps = max(maxSteps, s.d.Stats().Steps-st)
		maxAsked = max(maxAsked, s.asked-asked)
	}
	after := s.d.Stats()
	fmt.Fprintf(out, "queued %d: checks_needed=%d failed=%d searches=%d trips=%d deadlocks=%d max_steps_per_search=%d max_asked_per_search=%d\n",
		n, needed, failed, after.Searches-before.Searches, after.Trips-before.Trips, after.Deadlocks-before.Deadlocks, maxSteps, maxAsked)
	for _, name := range s.order {
		s.waiters[name].reported = s.waiters[name].err != nil
	}
}
