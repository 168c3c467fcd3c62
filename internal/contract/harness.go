package contract

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/ddtest"
	"github.com/txnlock/txnlock/internal/manualclock"
	"go.uber.org/goleak"
)

// Run plays every trace under dir against the managers newManager builds,
// one manager per "new". newManager must build its manager from cfg and
// refuse the options it does not have.
func Run(t *testing.T, dir string, newManager func(cfg Config) (txnlock.Manager, error)) {
	RunBackend(t, dir, func(cfg Config) (Backend, error) { return newManagerBackend(cfg, newManager) })
}

// RunBackend plays every trace under dir against the backends newBackend
// builds, one per "new": Run for a backend that is not a txnlock.Manager.
func RunBackend(t *testing.T, dir string, newBackend func(cfg Config) (Backend, error)) {
	ddtest.Walk(t, dir, func(t *testing.T, path string) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		h := &harness{newBackend: newBackend}
		defer h.stop()
		datadriven.RunTest(t, path, h.run)
	})
}

// harness plays one trace file.
type harness struct {
	newBackend func(Config) (Backend, error)
	b          Backend
	opts       Options
	clock      *manualclock.Clock
	det        txnlock.Detector // nil: none
	nextID     int
	waiting    []*request // in the order they were issued
}

// request is a waiting lock command.
type request struct {
	id       int
	name     string
	txn      txnlock.TxnID
	due      time.Time // when its timeout fires, if timed
	timed    bool
	finished bool
}

// stop ends the backend and the detector the trace started.
func (h *harness) stop() {
	if h.b != nil {
		h.b.Stop()
		h.b = nil
	}
	if c, ok := h.det.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	h.det, h.waiting = nil, nil
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	if td.Cmd == "new" {
		h.start(t, td)
		return "ok\n"
	}
	if h.b == nil {
		td.Fatalf(t, "%s before new", td.Cmd)
	}
	var out strings.Builder
	switch td.Cmd {
	case "lock":
		h.lock(t, td, &out)
	case "unlock":
		result(&out, h.b.Unlock(scanTxn(t, td), scanCF(t, td), scanRange(t, td)))
	case "release":
		result(&out, h.b.UnlockAll(scanTxn(t, td)))
	case "cancel":
		h.b.Cancel(h.find(t, td).id)
	case "advance":
		if len(td.CmdArgs) != 1 {
			td.Fatalf(t, "advance takes a duration")
		}
		d, err := time.ParseDuration(td.CmdArgs[0].Key)
		require.NoError(t, err)
		h.clock.Advance(d)
	case "timeout":
		r := h.find(t, td)
		if !r.timed {
			td.Fatalf(t, "%s has no timeout", r.name)
		}
		h.clock.Advance(r.due.Sub(h.clock.Now()))
	case "add-cf":
		result(&out, h.b.AddColumnFamily(scanCF(t, td)))
	case "drop-cf":
		result(&out, h.b.DropColumnFamily(scanCF(t, td)))
	case "close":
		result(&out, h.b.Close())
	case "status":
		out.WriteString(normalize(h.b.Status()).String())
	case "stats":
		s := h.b.Stats().String()
		if !td.HasArg("memory") {
			// Lock memory is a range manager's own figure.
			s, _, _ = strings.Cut(s, " lock_memory=")
		}
		fmt.Fprintf(&out, "%s\n", s)
	case "detector":
		sd, ok := h.det.(*SeamDetector)
		if !ok {
			td.Fatalf(t, "detector: the trace has no seam detector (new detector=seam)")
		}
		out.WriteString(sd.Log())
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	h.settle(&out)
	if c, ok := h.b.(Checker); ok {
		require.NoError(t, c.CheckInvariants(), "after %s", td.Pos)
	}
	if out.Len() == 0 {
		return "ok\n"
	}
	return out.String()
}

// start runs "new": a fresh clock, detector and backend.
func (h *harness) start(t *testing.T, td *datadriven.TestData) {
	h.stop()
	h.clock = manualclock.New()
	h.opts = Options{Stripes: 4}
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "timeout":
			h.opts.LockTimeout = parseTimeout(t, a.SingleVal(t))
		case "stripes":
			a.Scan(t, 0, &h.opts.Stripes)
		case "max-locks":
			a.Scan(t, 0, &h.opts.MaxLocks)
		case "max-memory":
			a.Scan(t, 0, &h.opts.MaxLockMemory)
		case "barrier":
			for _, k := range a.Vals {
				h.opts.EscalationBarriers = append(h.opts.EscalationBarriers, []byte(k))
			}
		case "collide":
			h.opts.CollideHashes = true
		case "detector":
			switch a.SingleVal(t) {
			case "deadlock":
				// Searches on block: the request that closes a cycle
				// is its victim, whichever manager it waits in. The
				// background pass, a safety net, never comes.
				d, err := deadlock.New(deadlock.Options{Clock: h.clock, BackgroundInterval: 1000 * time.Hour})
				require.NoError(t, err)
				h.det = d
			case "seam":
				h.det = NewSeamDetector()
			default:
				td.Fatalf(t, "unknown detector %q", a.SingleVal(t))
			}
		default:
			td.Fatalf(t, "new: unknown argument %q", a.Key)
		}
	}
	b, err := h.newBackend(Config{Options: h.opts, Clock: h.clock, Detector: h.det})
	require.NoError(t, err)
	h.b = b
}

// lock runs "lock".
func (h *harness) lock(t *testing.T, td *datadriven.TestData, out *strings.Builder) {
	var name string
	td.ScanArgs(t, "name", &name)
	req := txnlock.Request{Txn: scanTxn(t, td), CF: scanCF(t, td), Range: scanRange(t, td)}
	if td.HasArg("mode") {
		var mode string
		td.ScanArgs(t, "mode", &mode)
		req.Mode = parseMode(mode)
	}
	if td.HasArg("timeout") {
		var v string
		td.ScanArgs(t, "timeout", &v)
		req.Timeout = parseTimeout(t, v)
	}
	kind := CtxLive
	if td.HasArg("ctx") {
		var v string
		td.ScanArgs(t, "ctx", &v)
		switch v {
		case "cancelled":
			kind = CtxCancelled
		case "nil":
			kind = CtxNil
		default:
			td.Fatalf(t, "unknown ctx %q", v)
		}
	}
	for _, r := range h.waiting {
		switch {
		case r.name == name:
			td.Fatalf(t, "%s is waiting already", name)
		case r.txn == req.Txn:
			td.Fatalf(t, "%v waits already (%s): a transaction waits for one request at a time", req.Txn, r.name)
		}
	}
	h.nextID++
	r := &request{id: h.nextID, name: name, txn: req.Txn}
	r.due, r.timed = deadline(h.clock.Now(), req, h.opts.LockTimeout)
	done, err := h.b.Lock(r.id, req, kind)
	if done {
		fmt.Fprintf(out, "%s: %s\n", name, outcome(err))
		return
	}
	h.waiting = append(h.waiting, r)
	for _, w := range h.b.Status().Waits {
		if w.Txn == req.Txn {
			fmt.Fprintf(out, "%s: waiting for %s\n", name, txnList(w.Blockers))
			return
		}
	}
	td.Fatalf(t, "%s waits, but Status does not show it", name)
}

// settle prints the outcome of the waiting requests that finished, in the
// order they were issued.
func (h *harness) settle(out *strings.Builder) {
	ended := h.b.Settle()
	slices.SortFunc(ended, func(a, b Outcome) int { return cmp.Compare(a.ID, b.ID) })
	for _, e := range ended {
		for _, r := range h.waiting {
			if r.id == e.ID {
				r.finished = true
				fmt.Fprintf(out, "%s: %s\n", r.name, outcome(e.Err))
			}
		}
	}
	h.waiting = slices.DeleteFunc(h.waiting, func(r *request) bool { return r.finished })
}

// find returns the waiting request the command names.
func (h *harness) find(t *testing.T, td *datadriven.TestData) *request {
	var name string
	td.ScanArgs(t, "name", &name)
	for _, r := range h.waiting {
		if r.name == name {
			return r
		}
	}
	td.Fatalf(t, "%s is not waiting", name)
	return nil
}

// normalize orders the waits of s that Status.Sort leaves tied (same
// column family, same start, same Since: the clock stands still between
// most commands) by transaction, so that every manager prints them alike.
func normalize(s txnlock.Status) txnlock.Status {
	slices.SortStableFunc(s.Waits, func(a, b txnlock.WaitStatus) int {
		return cmp.Or(cmp.Compare(a.CF, b.CF), a.Range.Start().Compare(b.Range.Start()), a.Since.Compare(b.Since), cmp.Compare(a.Txn, b.Txn))
	})
	return s
}

func outcome(err error) string {
	if err == nil {
		return "granted"
	}
	return "error: " + err.Error()
}

func result(out *strings.Builder, err error) {
	if err == nil {
		out.WriteString("ok\n")
		return
	}
	fmt.Fprintf(out, "error: %v\n", err)
}

// txnList renders transaction ids as Status does: "[1 2]".
func txnList(ids []txnlock.TxnID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(uint64(id))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
