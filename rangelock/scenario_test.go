package rangelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
	"github.com/txnlock/txnlock/internal/manualclock"
	"go.uber.org/goleak"
)

// TestScenarios runs the scenario files in testdata. Commands:
//
//	new [stripes=N] [max-memory=N] [barrier=k,...] [timeout=d]
//	lock t=T [cf=C] r=RANGE m=S|X [timeout=d|nowait|forever]
//	unlock t=T [cf=C] r=RANGE
//	unlock-all t=T
//	advance d=DURATION
//	add-cf cf=C / drop-cf cf=C
//	status / stats / close
//
// A lock that does not complete at once prints "waiting"; every command
// then reports the pending requests that completed because of it, in the
// order they were issued. "Waiting" is observed in the Status view, never
// by sleeping. RANGE is [a,b], [a,b), (a,b), [k] or prefix:p, and ]a,b]
// or ]a,b) for a range that excludes a (datadriven reads a value that
// starts with "(" as a list); a bound may be -inf or +inf.
func TestScenarios(t *testing.T) {
	defer goleak.VerifyNone(t)
	ddtest.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{t: t}
		defer h.cleanup()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := h.run(t, d)
			if h.m != nil {
				require.NoError(t, h.m.checkInvariants(), "after %s", d.Pos)
			}
			return out
		})
	})
}

type pending struct {
	txn     txnlock.TxnID
	timer   bool      // waits with a finite timeout (one manual-clock timer)
	due     time.Time // when the timer fires
	done    chan error
	settled bool
}

type harness struct {
	t       *testing.T
	m       *Manager
	clock   *manualclock.Clock
	pending []*pending
}

func (h *harness) cleanup() {
	if h.m != nil {
		_ = h.m.Close()
		h.collect()
	}
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "new":
		h.cleanup()
		h.clock = manualclock.New()
		opts := Options{Stripes: 4, fixedHash: true}
		opts.Clock = h.clock
		opts.LockTimeout = txnlock.WaitForever
		for _, a := range d.CmdArgs {
			switch a.Key {
			case "stripes":
				opts.Stripes = atoi(t, a.Vals[0])
			case "max-memory":
				opts.MaxLockMemory = int64(atoi(t, a.Vals[0]))
			case "timeout":
				opts.LockTimeout = parseTimeout(t, a.Vals[0])
			case "barrier":
				keys := a.Vals
				opts.EscalationBarrier = func(_ txnlock.ColumnFamily, left, right txnlock.Range) bool {
					for _, k := range keys {
						// k starts a new index: nothing before k merges
						// with k or anything after it.
						at := txnlock.Point([]byte(k)).Start()
						if left.End().Compare(at) <= 0 && right.Start().Compare(at) >= 0 {
							return true
						}
					}
					return false
				}
			default:
				t.Fatalf("new: unknown argument %s", a.Key)
			}
		}
		m, err := New(opts)
		if err != nil {
			return err.Error()
		}
		h.m, h.pending = m, nil
		return "ok"
	case "lock":
		req := txnlock.Request{Txn: h.txn(d), CF: h.cf(d), Range: h.rng(d), Mode: h.mode(d)}
		if d.HasArg("timeout") {
			var v string
			d.ScanArgs(t, "timeout", &v)
			req.Timeout = parseTimeout(t, v)
		}
		for _, p := range h.pending {
			if p.txn == req.Txn {
				t.Fatalf("%s already has a waiting request", req.Txn)
			}
		}
		p := &pending{txn: req.Txn, done: make(chan error, 1)}
		timeout, _ := txnlock.ResolveTimeout(req.Timeout, h.m.opts.LockTimeout)
		p.timer = timeout != txnlock.WaitForever && timeout != txnlock.NoWait
		if p.timer {
			p.due = h.clock.Now().Add(timeout)
		}
		go func() { p.done <- h.m.Lock(context.Background(), req) }()
		if err, done := h.waitStarted(p, req); done {
			fmt.Fprintf(&out, "%s: %s\n", req.Txn, result(err))
		} else {
			h.pending = append(h.pending, p)
			fmt.Fprintf(&out, "%s: waiting\n", req.Txn)
		}
	case "unlock":
		fmt.Fprintf(&out, "%s\n", result(h.m.Unlock(h.txn(d), h.cf(d), h.rng(d))))
	case "unlock-all":
		fmt.Fprintf(&out, "%s\n", result(h.m.UnlockAll(h.txn(d))))
	case "advance":
		var v string
		d.ScanArgs(t, "d", &v)
		dur, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(dur)
		fmt.Fprintf(&out, "now +%v\n", dur)
		// The requests whose timers fired fail on their own goroutines:
		// wait until they have left the queue.
		for _, p := range h.pending {
			for p.timer && !p.due.After(h.clock.Now()) && h.isWaiting(p.txn) {
				time.Sleep(50 * time.Microsecond)
			}
		}
	case "add-cf":
		fmt.Fprintf(&out, "%s\n", result(h.m.AddColumnFamily(h.cf(d))))
	case "drop-cf":
		fmt.Fprintf(&out, "%s\n", result(h.m.DropColumnFamily(h.cf(d))))
	case "status":
		return h.m.Status().String()
	case "stats":
		s := h.m.Stats()
		s.WaitTime = 0
		return s.String()
	case "close":
		fmt.Fprintf(&out, "%s\n", result(h.m.Close()))
	default:
		t.Fatalf("unknown command %s", d.Cmd)
	}
	h.collect()
	for _, p := range h.pending {
		if p.settled {
			fmt.Fprintf(&out, "%s: %s\n", p.txn, result(<-p.done))
		}
	}
	h.pending = slices.DeleteFunc(h.pending, func(p *pending) bool { return p.settled })
	return out.String()
}

// waitStarted waits until p's request returned (true) or is waiting in
// the Status view with its timer armed (false).
func (h *harness) waitStarted(p *pending, req txnlock.Request) (error, bool) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			return err, true
		default:
		}
		if h.isWaiting(req.Txn) && h.clock.Pending() >= h.timers()+btoi(p.timer) {
			return nil, false
		}
		runtime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
	h.t.Fatalf("request of %s neither returned nor waits", req.Txn)
	return nil, false
}

// collect marks the pending requests that no longer wait; they have
// returned or are about to.
func (h *harness) collect() {
	// A waiter that nothing blocks is being granted right now (a
	// release or a leaving waiter re-checks wide waiters after dropping
	// its stripe): let that finish first.
	deadline := time.Now().Add(30 * time.Second)
	for h.m != nil && h.anyUnblocked() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	for _, p := range h.pending {
		if !p.settled && !h.isWaiting(p.txn) {
			p.settled = true
		}
	}
	// Wait for the timers of the settled ones to be stopped.
	for h.clock != nil && h.clock.Pending() > h.timers() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
}

// anyUnblocked reports whether some waiter has no blockers.
func (h *harness) anyUnblocked() bool {
	for _, w := range h.m.Status().Waits {
		if len(w.Blockers) == 0 {
			return true
		}
	}
	return false
}

// timers is the number of unsettled pending requests with a timer.
func (h *harness) timers() int {
	n := 0
	for _, p := range h.pending {
		if !p.settled && p.timer {
			n++
		}
	}
	return n
}

func (h *harness) isWaiting(txn txnlock.TxnID) bool {
	for _, w := range h.m.Status().Waits {
		if w.Txn == txn {
			return true
		}
	}
	return false
}

func (h *harness) txn(d *datadriven.TestData) txnlock.TxnID {
	var v uint64
	d.ScanArgs(h.t, "t", &v)
	return txnlock.TxnID(v)
}

func (h *harness) cf(d *datadriven.TestData) txnlock.ColumnFamily {
	var v int
	if d.HasArg("cf") {
		d.ScanArgs(h.t, "cf", &v)
	}
	return txnlock.ColumnFamily(v)
}

func (h *harness) mode(d *datadriven.TestData) txnlock.Mode {
	var v string
	d.ScanArgs(h.t, "m", &v)
	switch v {
	case "S":
		return txnlock.Shared
	case "X":
		return txnlock.Exclusive
	case "bad":
		return 7
	}
	h.t.Fatalf("bad mode %q", v)
	return 0
}

func (h *harness) rng(d *datadriven.TestData) txnlock.Range {
	for _, a := range d.CmdArgs {
		if a.Key == "r" {
			if len(a.Vals) == 2 {
				// datadriven reads (a,b) as a list of two values.
				return parseRange(h.t, "("+a.Vals[0]+","+a.Vals[1]+")")
			}
			return parseRange(h.t, a.Vals[0])
		}
	}
	h.t.Fatalf("%s: missing r=", d.Cmd)
	return txnlock.Range{}
}

// parseRange parses the bracket notation of the scenario files.
func parseRange(t testing.TB, s string) txnlock.Range {
	s = strings.ReplaceAll(s, " ", "")
	switch {
	case strings.HasPrefix(s, "prefix:"):
		return txnlock.Prefix([]byte(strings.TrimPrefix(s, "prefix:")))
	case s == "invalid":
		return txnlock.Range{}
	}
	if len(s) < 3 {
		t.Fatalf("bad range %q", s)
	}
	open, body, closeB := s[0], s[1:len(s)-1], s[len(s)-1]
	parts := strings.Split(body, ",")
	if len(parts) == 1 {
		return txnlock.Point([]byte(parts[0]))
	}
	end := func(k string, incl bool) txnlock.Endpoint {
		switch {
		case k == "-inf" || k == "+inf":
			return txnlock.Infinite()
		case incl:
			return txnlock.InclusiveKey([]byte(k))
		}
		return txnlock.ExclusiveKey([]byte(k))
	}
	r, err := txnlock.NewRange(end(parts[0], open == '['), end(parts[1], closeB == ']'))
	if err != nil {
		return txnlock.Range{} // the scenario tests the invalid range
	}
	return r
}

func parseTimeout(t testing.TB, v string) time.Duration {
	switch v {
	case "nowait":
		return txnlock.NoWait
	case "forever":
		return txnlock.WaitForever
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// result renders an error for a scenario: "ok", or the sentinel and the
// blockers of a *LockError.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	var le *txnlock.LockError
	if errors.As(err, &le) {
		var b bytes.Buffer
		b.WriteString("error: " + le.Err.Error())
		if len(le.Blockers) > 0 {
			fmt.Fprintf(&b, " (blocked by %v)", le.Blockers)
		}
		return b.String()
	}
	return "error: " + err.Error()
}

func atoi(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
