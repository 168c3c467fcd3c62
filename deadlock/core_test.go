package deadlock

import (
	"fmt"
	"slices"
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

// TestCore runs the trace files in testdata/core against the core alone,
// on one goroutine, with a traceSource for the managers: the trace sets
// the waits and whom each lock is blocked by, as the lock tables stand,
// and the core reads them as it reads the registry. The core changes
// nothing: the trace prints each verdict it returns, then plays the
// Detector, failing the victim's wait if it still waits and telling the
// core (settle), as Detector.checkFrom does under its mutex. Each file is
// one of the events design.go lists as adding an edge to the
// waits-for graph, and the search the Detector runs for it.
//
// Commands:
//
//	new [options as in TestScenarios]
//	blockers res=R txns=(T,..)
//	wait txn=T res=R [w=NAME] [key=K] [mode=S|X] [locks=N] [stamp=N]
//	waitsfor w=NAME txns=(T,..)
//	end w=NAME          the wait is granted or times out; it is still reported
//	unblock w=NAME      its goroutine's Unblock: the source lists it no more
//	check w=NAME [ends=(NAME,..)]
//	                    the search of a wait's Check, or of a Recheck; the
//	                    waits of ends end as the first verdict comes
//	waits-of txn=T      the search from each wait of T (Passed, or the
//	                    Unblock of a granted wait of T's while T waits
//	                    elsewhere)
//	pass                a background pass over a snapshot of the source
//	stats
func TestCore(t *testing.T) {
	ddtest.Walk(t, "testdata/core", func(t *testing.T, path string) {
		tr := &coreTrace{}
		tr.reset(Options{})
		datadriven.RunTest(t, path, tr.run)
	})
}

type coreTrace struct {
	clock *manualclock.Clock
	c     core
	src   *traceSource
}

// traceSource is the managers' lock tables as a trace sets them.
type traceSource struct {
	locks map[string][]txnlock.TxnID // blockers by lock
	list  []*traceWait               // reported, in report order
	named map[string]*traceWait
	stamp uint64
}

// traceWait is one wait: a detect.Waiter that answers from its lock's
// blockers, or from the exact list a waitsfor command set.
type traceWait struct {
	wait
	src      *traceSource
	name     string
	lock     string
	waitsFor []txnlock.TxnID
	exact    bool
	ended    bool
	locks    int // locks its transaction holds
	ref      txnlock.LockRef
	since    time.Time
}

func (w *traceWait) Fail(error) bool {
	if w.ended {
		return false
	}
	w.ended = true
	return true
}
func (w *traceWait) Txn() txnlock.TxnID { return w.txn }
func (w *traceWait) Active() bool       { return !w.ended }
func (w *traceWait) Regranted() bool    { return true }
func (w *traceWait) Requested() (txnlock.LockRef, time.Time) {
	return w.ref, w.since
}

func (w *traceWait) Blockers(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	if w.ended {
		return dst, false
	}
	return append(dst, w.src.locks[w.lock]...), true
}

func (w *traceWait) WaitsFor(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	if w.ended {
		return dst, false
	}
	if w.exact {
		return append(dst, w.waitsFor...), true
	}
	for _, b := range w.src.locks[w.lock] {
		if b != w.txn {
			dst = append(dst, b)
		}
	}
	return dst, true
}

func (s *traceSource) waits(txn txnlock.TxnID, exact bool, fn func(w *wait, who []txnlock.TxnID)) {
	for _, w := range s.list {
		if w.txn != txn || w.ended {
			continue
		}
		var who []txnlock.TxnID
		if exact {
			who, _ = w.WaitsFor(nil)
		} else {
			who, _ = w.Blockers(nil)
		}
		fn(&w.wait, who)
	}
}

func (s *traceSource) describe(e *edge) {
	for _, w := range s.list {
		if w == e.waiter && w.seq == e.seq {
			e.lock, e.since = w.Requested()
			e.locksHeld = w.locks
		}
	}
}

// fail is the Detector's registry.fail: the wait must still be reported
// and active.
func (s *traceSource) fail(v wait) bool {
	for _, w := range s.list {
		if w == v.waiter && w.seq == v.seq {
			return w.Fail(nil)
		}
	}
	return false
}

// of names the waiter of a wait the core returned.
func (s *traceSource) of(w detect.Waiter) string { return w.(*traceWait).name }

func (tr *coreTrace) reset(opts Options) {
	tr.clock = manualclock.New()
	opts.Clock = tr.clock
	opts.EnsureDefaults()
	tr.src = &traceSource{locks: map[string][]txnlock.TxnID{}, named: map[string]*traceWait{}}
	tr.c = newCore(opts, tr.src)
}

func (tr *coreTrace) named(t *testing.T, d *datadriven.TestData) *traceWait {
	var name string
	d.ScanArgs(t, "w", &name)
	w := tr.src.named[name]
	require.NotNil(t, w, "unknown wait %s", name)
	return w
}

func (tr *coreTrace) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "new":
		o, _ := parseOptions(t, d)
		tr.reset(o)
	case "blockers":
		var res string
		d.ScanArgs(t, "res", &res)
		list, _ := txnList(t, d, "txns")
		tr.src.locks[res] = list
	case "wait":
		txn := scanTxn(t, d)
		var res string
		d.ScanArgs(t, "res", &res)
		key, mode, locks := res, "X", 0
		d.MaybeScanArgs(t, "key", &key)
		d.MaybeScanArgs(t, "mode", &mode)
		d.MaybeScanArgs(t, "locks", &locks)
		tr.src.stamp++
		d.MaybeScanArgs(t, "stamp", &tr.src.stamp)
		m := txnlock.Exclusive
		if mode == "S" {
			m = txnlock.Shared
		}
		w := &traceWait{src: tr.src, name: waiterName(t, d, txn), lock: res, locks: locks,
			ref:   txnlock.LockRef{Range: txnlock.Point([]byte(key)), Mode: m},
			since: tr.clock.Now()}
		w.wait = wait{waiter: w, txn: txn, seq: tr.src.stamp}
		tr.src.list = append(tr.src.list, w)
		tr.src.named[w.name] = w
	case "waitsfor":
		w := tr.named(t, d)
		list, ok := txnList(t, d, "txns")
		require.True(t, ok, "waitsfor wants txns=(..)")
		w.waitsFor, w.exact = list, true
	case "end":
		tr.named(t, d).ended = true
	case "unblock":
		w := tr.named(t, d)
		tr.src.list = slices.DeleteFunc(tr.src.list, func(x *traceWait) bool { return x == w })
	case "check":
		w := tr.named(t, d)
		s := tr.c.start(w.txn, w)
		tr.play(t, &out, &s, argList(d, "ends"))
	case "waits-of":
		s := tr.c.start(scanTxn(t, d), nil)
		tr.play(t, &out, &s, nil)
	case "pass":
		tr.pass(&out)
	case "stats":
		fmt.Fprintln(&out, tr.c.stats)
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	if out.Len() == 0 {
		return "ok\n"
	}
	return out.String()
}

// play runs search s as Detector.checkFrom does: it takes each verdict,
// fails the victim's wait if it still waits, and settles it. The waits
// named in ends end as the first verdict comes, before the victim is
// failed.
func (tr *coreTrace) play(t *testing.T, out *strings.Builder, s *search, ends []string) {
	before := tr.c.stats
	for _, r := range s.roots {
		fmt.Fprintf(out, "search from %s\n", tr.src.of(r))
	}
	for {
		v, ok := tr.c.next(s)
		if !ok {
			break
		}
		tr.printVerdict(out, v)
		for _, name := range ends {
			require.NotNil(t, tr.src.named[name], "unknown wait %s", name)
			tr.src.named[name].ended = true
		}
		ends = nil
		delivered := tr.src.fail(v.victim)
		tr.c.settle(s, v, delivered)
		if delivered {
			fmt.Fprintf(out, "failed %s\n", tr.src.of(v.victim.waiter))
		} else {
			fmt.Fprintf(out, "not failed: %s no longer waits\n", tr.src.of(v.victim.waiter))
		}
	}
	tr.printChange(out, before, s.deferred)
}

// pass runs a background pass over a snapshot of every active wait, as
// Detector.backgroundPass does.
func (tr *coreTrace) pass(out *strings.Builder) {
	before := tr.c.stats
	var flat []flatWait
	var arena []txnlock.TxnID
	for _, w := range tr.src.list {
		if w.ended {
			continue
		}
		b0 := len(arena)
		arena, _ = w.Blockers(arena)
		flat = append(flat, flatWait{w: w.wait, b0: b0, b1: len(arena)})
	}
	deferred := false
	var stack []frame
	backgroundPass(snapshotOf(flat, arena), &stack, maxCyclesPerPass, func(cycle []*edge) *edge {
		v, drop := tr.c.resolve(cycle)
		if v == nil {
			deferred = true
			fmt.Fprintf(out, "not confirmed; dropped %s\n", tr.src.of(drop.waiter))
			return drop
		}
		tr.printVerdict(out, *v)
		delivered := tr.src.fail(v.victim)
		tr.c.settle(nil, *v, delivered)
		fmt.Fprintf(out, "failed %s: %v\n", tr.src.of(v.victim.waiter), delivered)
		return drop
	})
	tr.printChange(out, before, deferred)
}

func (tr *coreTrace) printVerdict(out *strings.Builder, v verdict) {
	fmt.Fprintf(out, "verdict: fail %s: %v\n", tr.src.of(v.victim.waiter), v.err)
}

// printChange prints the counters that moved, and whether a pass is
// wanted.
func (tr *coreTrace) printChange(out *strings.Builder, before Stats, deferred bool) {
	after := tr.c.stats
	var moved []string
	add := func(name string, a, b uint64) {
		if a != b {
			moved = append(moved, fmt.Sprintf("%s+%d", name, b-a))
		}
	}
	add("searches", before.Searches, after.Searches)
	add("trips", before.Trips, after.Trips)
	add("deferred", before.Deferred, after.Deferred)
	add("assumed", before.Assumed, after.Assumed)
	add("deadlocks", before.Deadlocks, after.Deadlocks)
	add("false_positives_avoided", before.FalsePositivesAvoided, after.FalsePositivesAvoided)
	if len(moved) > 0 {
		fmt.Fprintf(out, "stats: %s\n", strings.Join(moved, " "))
	}
	if deferred {
		out.WriteString("pass wanted\n")
	}
}
