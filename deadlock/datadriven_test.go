package deadlock

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestScenarios runs the scenario files in testdata/ against a Detector
// whose background goroutine is not started: a background pass runs only
// when a scenario says "background", and time moves only with "advance"
// (or by "tick" per clock read, to make a search run out of time).
//
// Commands:
//
//	new [detection=on-block|background|off] [depth=N] [steps=N] [time=D] [breaker=defer|assume]
//	    [victim=requester|youngest|fewest-locks|priority] [prio=(1:5,..)]
//	    [history=N] [tick=D]
//	block txn=T res=R [key=K] [mode=S|X] [cf=N] [locks=N] [w=NAME]
//	blockers res=R txns=(T,..) | from=T to=T
//	unblock txn=T [w=NAME]       drop res=R
//	check txn=T [w=NAME]         background [unblock=(NAME,..)]  suspects
//	timeout txn=T [w=NAME]       grant txn=T [w=NAME]
//	chain from=T n=N [cycle]     queue res=R from=T n=N [holding]
//	advance D    history [report]    report    stats    graph
type scenario struct {
	t     *testing.T
	clock *steppingClock
	d     *Detector
	res   map[string]txnlock.ResourceID
	// waiters by name ("t1" unless a block says w=...), and the names in
	// creation order so that failures print in a stable order.
	waiters map[string]*fakeWaiter
	order   []string
	lastErr *txnlock.DeadlockError
}

// fakeWaiter is a txnlock.Waiter that remembers the error it was failed
// with. Scenario tests are single-goroutine.
type fakeWaiter struct {
	name     string
	txn      txnlock.TxnID
	err      error
	granted  bool
	reported bool
}

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
	ddtest.Walk(t, "testdata", func(t *testing.T, path string) {
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
	s.res = map[string]txnlock.ResourceID{}
	s.waiters = map[string]*fakeWaiter{}
	s.order = nil
	s.lastErr = nil
}

func (c *steppingClock) tickOr0() time.Duration {
	if c == nil {
		return 0
	}
	return c.tick
}

func (s *scenario) resource(name string) txnlock.ResourceID {
	id, ok := s.res[name]
	if !ok {
		id = s.d.NewResource()
		s.res[name] = id
	}
	return id
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
		key, mode, cf, locks := res, "X", 0, 0
		d.MaybeScanArgs(t, "key", &key)
		d.MaybeScanArgs(t, "mode", &mode)
		d.MaybeScanArgs(t, "cf", &cf)
		d.MaybeScanArgs(t, "locks", &locks)
		if _, needsCheck := s.block(waiterName(t, d, txn), txn, res, key, mode, cf, locks); needsCheck {
			out.WriteString("needs check\n")
		}
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
		for _, v := range argList(d, "txns") {
			n, err := strconv.ParseUint(v, 10, 64)
			require.NoError(t, err)
			txns = append(txns, txnlock.TxnID(n))
		}
		s.d.SetBlockers(s.resource(res), txns)
	case "unblock":
		txn := scanTxn(t, d)
		w := s.waiters[waiterName(t, d, txn)]
		require.NotNil(t, w, "unknown waiter")
		s.d.Unblock(w)
	case "grant":
		// The manager grants the waiter, which wakes; its Unblock has
		// not reached the detector yet.
		w := s.waiters[waiterName(t, d, scanTxn(t, d))]
		require.NotNil(t, w, "unknown waiter")
		w.granted = true
	case "timeout":
		// The waiter's own timeout fires: it fails, and its manager has
		// not yet told the detector.
		w := s.waiters[waiterName(t, d, scanTxn(t, d))]
		require.NotNil(t, w, "unknown waiter")
		w.Fail(txnlock.ErrLockTimeout)
		w.reported = true
	case "drop":
		var res string
		d.ScanArgs(t, "res", &res)
		s.d.DropResource(s.resource(res))
	case "check":
		txn := scanTxn(t, d)
		w := s.waiters[waiterName(t, d, txn)]
		require.NotNil(t, w, "unknown waiter")
		before := s.d.Stats()
		err := s.d.Check(w)
		if err != nil {
			// What lockwait.Waiter.Wait does with a Check error.
			w.Fail(err)
			w.reported = true
			fmt.Fprintf(&out, "%s: %v\n", w.name, err)
			s.lastErr = asDeadlock(t, err)
		} else {
			fmt.Fprintf(&out, "%s: waits\n", w.name)
		}
		s.printChange(&out, before)
	case "background":
		// With unblock=(NAME,..), those waits end between the snapshot
		// and the re-check of the cycles found in it.
		before := s.d.Stats()
		gone := argList(d, "unblock")
		s.d.testingAfterSnapshot = func() {
			for _, name := range gone {
				s.d.Unblock(s.waiters[name])
			}
		}
		if !d.HasArg("no-suspects") {
			s.d.checkSuspects()
		}
		s.d.backgroundPass()
		s.d.testingAfterSnapshot = nil
		s.printChange(&out, before)
	case "suspects":
		// What the background goroutine does first when woken.
		before := s.d.Stats()
		s.d.checkSuspects()
		s.printChange(&out, before)
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
		s.d.mu.Lock()
		out.WriteString(s.d.mu.c.g.describe())
		s.d.mu.Unlock()
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

// block records a wait of txn for res and returns its waiter and whether
// Block asked for a Check.
func (s *scenario) block(name string, txn txnlock.TxnID, res, key, mode string, cf, locks int) (*fakeWaiter, bool) {
	m := txnlock.Exclusive
	if mode == "S" {
		m = txnlock.Shared
	}
	w := &fakeWaiter{name: name, txn: txn}
	if _, ok := s.waiters[name]; !ok {
		s.order = append(s.order, name)
	}
	s.waiters[name] = w
	needsCheck := s.d.Block(txnlock.WaitEdge{
		Waiter:    w,
		Resource:  s.resource(res),
		Lock:      txnlock.LockRef{CF: txnlock.ColumnFamily(cf), Range: txnlock.Point([]byte(key)), Mode: m},
		LocksHeld: locks,
		Since:     s.clock.Clock.Now(),
	})
	return w, needsCheck
}

// printChange prints the waiters failed since the last command, and the
// counters that moved.
func (s *scenario) printChange(out *strings.Builder, before Stats) {
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
	add("trips", before.Trips, after.Trips)
	add("deferred", before.Deferred, after.Deferred)
	add("assumed", before.Assumed, after.Assumed)
	add("deadlocks", before.Deadlocks, after.Deadlocks)
	add("false_positives_avoided", before.FalsePositivesAvoided, after.FalsePositivesAvoided)
	if len(moved) > 0 {
		fmt.Fprintf(out, "stats: %s\n", strings.Join(moved, " "))
	}
}

func (s *scenario) cmdNew(t *testing.T, d *datadriven.TestData) {
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
	s.clock = nil
	s.reset(o)
	s.clock.tick = tick
}

// cmdChain makes txns from..from+n-1 each wait for a resource held by the
// next (resources c<i>); with "cycle" the last waits for the first.
// The waits are made without checks.
func (s *scenario) cmdChain(t *testing.T, d *datadriven.TestData) {
	var from, n int
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "n", &n)
	// Blockers first, as a manager sets them before the first wait.
	for i := range n {
		next := txnlock.TxnID(from + i + 1)
		if i == n-1 {
			if !d.HasArg("cycle") {
				continue
			}
			next = txnlock.TxnID(from)
		}
		s.d.SetBlockers(s.resource(fmt.Sprintf("c%d", from+i)), []txnlock.TxnID{next})
	}
	for i := range n {
		res := fmt.Sprintf("c%d", from+i)
		s.block(fmt.Sprintf("t%d", from+i), txnlock.TxnID(from+i), res, res, "X", 0, 1)
	}
}

// cmdQueue queues txns from..from+n-1 on res, and prints how many Blocks
// asked for a Check and how many waits were parked out of the graph
// (dormant.go). Then, to show what a search would cost, it checks every
// waiter anyway and prints how many were failed and what the searches
// cost. With holding, each queued transaction first becomes the blocker
// of a lock of its own ("h<txn>", no waiters yet), as a transaction that
// holds row locks and queues for an AUTO-INC lock: its wait cannot be
// parked, and goes into the graph.
func (s *scenario) cmdQueue(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	var from, n int
	var res string
	d.ScanArgs(t, "res", &res)
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "n", &n)
	before := s.d.Stats()
	failed, needed := 0, 0
	maxSteps := uint64(0)
	parked := 0
	for i := range n {
		txn := txnlock.TxnID(from + i)
		if d.HasArg("holding") {
			s.d.SetBlockers(s.resource(fmt.Sprintf("h%d", txn)), []txnlock.TxnID{txn})
		}
		w, needsCheck := s.block(fmt.Sprintf("t%d", from+i), txn, res, res, "X", 0, 0)
		if needsCheck {
			needed++
		}
		if s.d.mu.c.g.findWait(txn, w) == nil {
			parked++
		}
		st := s.d.Stats().Steps
		if err := s.d.Check(w); err != nil {
			failed++
		}
		maxSteps = max(maxSteps, s.d.Stats().Steps-st)
	}
	after := s.d.Stats()
	fmt.Fprintf(out, "queued %d: checks_needed=%d parked=%d failed=%d searches=%d trips=%d deadlocks=%d max_steps_per_search=%d\n",
		n, needed, parked, failed, after.Searches-before.Searches, after.Trips-before.Trips, after.Deadlocks-before.Deadlocks, maxSteps)
	for _, name := range s.order {
		s.waiters[name].reported = s.waiters[name].err != nil
	}
}
