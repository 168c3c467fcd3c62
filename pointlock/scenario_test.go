package pointlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
	"github.com/txnlock/txnlock/internal/manualclock"
)

// TestScenarios runs the trace-like scenario files in testdata. Commands:
//
//	new [stripes=N] [max-locks=N] [timeout=D|nowait|forever] [detector] [collide]
//	lock name=R txn=N key=K mode=S|X [cf=N] [timeout=D|nowait|forever]
//	     [range=A,B] [zero-range] [ctx=nil|cancelled] [bad-mode]
//	cancel name=R            cancel the context of a waiting request
//	unlock txn=N key=K [cf=N] [range=A,B]
//	unlock-all txn=N
//	advance D                move the manual clock
//	add-cf cf=N / drop-cf cf=N / close / status / stats / detector
//
// A request that does not finish at once is reported "waiting" only once
// Status shows it queued (and its timeout timer is armed); after every
// command, requests that left the queue are awaited and their outcome is
// printed. Nothing sleeps to "make sure" something waits.
func TestScenarios(t *testing.T) {
	ddtest.Walk(t, "testdata", func(t *testing.T, path string) {
		env := &scenarioEnv{t: t}
		defer env.closeAll()
		datadriven.RunTest(t, path, env.run)
	})
}

type pendingReq struct {
	name  string
	req   txnlock.Request
	key   string
	timed bool // has a finite timeout: one manual-clock timer
	// deadline is when the timeout fires (manual clock); once the clock
	// reaches it, or the context is cancelled, the request must finish.
	deadline time.Time
	mustEnd  bool
	done     chan error
	stop     context.CancelFunc
}

type scenarioEnv struct {
	t       *testing.T
	m       *Manager
	clock   *manualclock.Clock
	det     *fakeDetector
	pending []*pendingReq
}

func (env *scenarioEnv) closeAll() {
	if env.m != nil {
		_ = env.m.Close()
		env.settle(&strings.Builder{})
	}
}

func (env *scenarioEnv) run(t *testing.T, td *datadriven.TestData) string {
	var out strings.Builder
	switch td.Cmd {
	case "new":
		env.closeAll()
		env.clock = manualclock.New()
		opts := Options{}
		opts.Clock = env.clock
		td.MaybeScanArgs(t, "stripes", &opts.Stripes)
		td.MaybeScanArgs(t, "max-locks", &opts.MaxLocks)
		if td.HasArg("timeout") {
			opts.LockTimeout = scanTimeout(t, td)
		}
		env.det = nil
		if td.HasArg("detector") {
			env.det = newFakeDetector()
			opts.Detector = env.det
		}
		m, err := New(opts)
		require.NoError(t, err)
		if td.HasArg("collide") {
			m.hashMask = 3 // every key collides with a quarter of the others
		}
		env.m, env.pending = m, nil
		return "ok\n"
	case "lock":
		env.lock(t, td, &out)
	case "cancel":
		var name string
		td.ScanArgs(t, "name", &name)
		for _, p := range env.pending {
			if p.name == name {
				p.stop()
				p.mustEnd = true
			}
		}
	case "unlock":
		var txn uint64
		td.ScanArgs(t, "txn", &txn)
		r, cf := scanRange(t, td), scanCF(t, td)
		fmt.Fprintf(&out, "%s\n", errString(env.m.Unlock(txnlock.TxnID(txn), cf, r)))
	case "unlock-all":
		var txn uint64
		td.ScanArgs(t, "txn", &txn)
		fmt.Fprintf(&out, "%s\n", errString(env.m.UnlockAll(txnlock.TxnID(txn))))
	case "advance":
		d, err := time.ParseDuration(td.CmdArgs[0].Key)
		require.NoError(t, err)
		env.clock.Advance(d)
	case "add-cf":
		fmt.Fprintf(&out, "%s\n", errString(env.m.AddColumnFamily(scanCF(t, td))))
	case "drop-cf":
		fmt.Fprintf(&out, "%s\n", errString(env.m.DropColumnFamily(scanCF(t, td))))
	case "close":
		fmt.Fprintf(&out, "%s\n", errString(env.m.Close()))
	case "status":
		out.WriteString(env.m.Status().String())
	case "stats":
		s := env.m.Stats()
		s.WaitTime = 0 // depends on the order goroutines read the clock
		fmt.Fprintf(&out, "%s\n", strings.ReplaceAll(s.String(), " ", "\n"))
	case "detector":
		out.WriteString(env.det.takeLog())
	default:
		t.Fatalf("unknown command %q", td.Cmd)
	}
	env.settle(&out)
	if out.Len() == 0 {
		return "ok\n"
	}
	return out.String()
}

func (env *scenarioEnv) lock(t *testing.T, td *datadriven.TestData, out *strings.Builder) {
	var name string
	var txn uint64
	td.ScanArgs(t, "name", &name)
	td.ScanArgs(t, "txn", &txn)
	req := txnlock.Request{Txn: txnlock.TxnID(txn), CF: scanCF(t, td), Range: scanRange(t, td)}
	var mode string
	td.MaybeScanArgs(t, "mode", &mode)
	switch mode {
	case "S":
		req.Mode = txnlock.Shared
	case "X":
		req.Mode = txnlock.Exclusive
	case "":
	default:
		req.Mode = txnlock.Mode(7)
	}
	if td.HasArg("timeout") {
		req.Timeout = scanTimeout(t, td)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ctxArg string
	td.MaybeScanArgs(t, "ctx", &ctxArg)
	switch ctxArg {
	case "nil":
		ctx = nil
	case "cancelled":
		cancel()
	}
	p := &pendingReq{name: name, req: req, done: make(chan error, 1), stop: cancel}
	p.key, _ = keyOf(req.Range)
	t0, err := txnlock.ResolveTimeout(req.Timeout, env.m.Options().LockTimeout)
	p.timed = err == nil && t0 != txnlock.WaitForever && t0 != txnlock.NoWait
	if p.timed {
		p.deadline = env.clock.Now().Add(t0)
	}
	checks := 0
	if env.det != nil {
		checks = env.det.checked(req.Txn)
	}
	go func() { p.done <- env.m.Lock(ctx, req) }()
	// Either the request finishes, or Status shows it waiting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-p.done:
			cancel()
			fmt.Fprintf(out, "%s: %s\n", name, outcome(err))
			return
		default:
		}
		if env.waiting(p) && (env.det == nil || env.det.checked(req.Txn) > checks) {
			if !env.waiting(p) {
				continue // the detector failed it: its outcome comes next
			}
			env.pending = append(env.pending, p)
			env.waitTimersArmed(t)
			fmt.Fprintf(out, "%s: waiting\n", name)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s neither finished nor queued", name)
		}
		runtime.Gosched()
	}
}

// waiting reports whether Status shows p queued.
func (env *scenarioEnv) waiting(p *pendingReq) bool {
	for _, w := range env.m.Status().Waits {
		k, _ := keyOf(w.Range)
		if w.Txn == p.req.Txn && w.CF == p.req.CF && k == p.key && w.Mode == p.req.Mode {
			return true
		}
	}
	return false
}

// waitTimersArmed waits until every pending request with a finite timeout
// has armed its manual-clock timer, so that "advance" fires it.
func (env *scenarioEnv) waitTimersArmed(t *testing.T) {
	want := 0
	for _, p := range env.pending {
		if p.timed {
			want++
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for env.clock.Pending() < want {
		if time.Now().After(deadline) {
			t.Fatalf("timers not armed: %d < %d", env.clock.Pending(), want)
		}
		runtime.Gosched()
	}
}

// settle awaits every pending request that Status no longer shows waiting
// and prints its outcome, in the order the requests were made.
func (env *scenarioEnv) settle(out *strings.Builder) {
	keep := env.pending[:0]
	for _, p := range env.pending {
		if p.timed && !env.clock.Now().Before(p.deadline) {
			p.mustEnd = true
		}
		if !p.mustEnd && env.m != nil && env.waiting(p) {
			select {
			case err := <-p.done: // a race with Status: it just finished
				p.stop()
				fmt.Fprintf(out, "%s: %s\n", p.name, outcome(err))
			default:
				keep = append(keep, p)
			}
			continue
		}
		select {
		case err := <-p.done:
			p.stop()
			fmt.Fprintf(out, "%s: %s\n", p.name, outcome(err))
		case <-time.After(10 * time.Second):
			env.t.Fatalf("%s left the queue but did not return", p.name)
		}
	}
	env.pending = keep
}

func outcome(err error) string {
	if err == nil {
		return "granted"
	}
	return "error: " + err.Error()
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return "error: " + err.Error()
}

func keyOf(r txnlock.Range) (string, bool) {
	k, ok := r.PointKey()
	return string(k), ok
}

func scanCF(t *testing.T, td *datadriven.TestData) txnlock.ColumnFamily {
	var cf int
	td.MaybeScanArgs(t, "cf", &cf)
	return txnlock.ColumnFamily(cf)
}

func scanRange(t *testing.T, td *datadriven.TestData) txnlock.Range {
	if td.HasArg("zero-range") {
		return txnlock.Range{}
	}
	if td.HasArg("range") {
		var a, b string
		td.ScanArgs(t, "range", &a, &b)
		r, err := txnlock.Closed([]byte(a), []byte(b))
		require.NoError(t, err)
		return r
	}
	var key string
	td.ScanArgs(t, "key", &key)
	return txnlock.Point([]byte(key))
}

func scanTimeout(t *testing.T, td *datadriven.TestData) time.Duration {
	var s string
	td.ScanArgs(t, "timeout", &s)
	switch s {
	case "nowait":
		return txnlock.NoWait
	case "forever":
		return txnlock.WaitForever
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d
}

var _ = errors.Is
