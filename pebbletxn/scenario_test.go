package pebbletxn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// TestScenarios runs the testdata scripts. Commands:
//
//	new kind=point|range            fresh DB, manager and deadlock detector
//	begin t1
//	get t1 k | put t1 k v | delete t1 k
//	gfu t1 k S|X                    GetForUpdate
//	scan t1 a z | scanfu t1 a z S|X [a, z]
//	lockrange t1 a z S|X            LockRange [a, z]
//	commit t1 | rollback t1
//	requests t1                     LockRequests
//	status                          the manager's Status
//
// A call that blocks prints "t2: waiting for [t1]" once its waiter is
// about to sleep, its wait reported to the detector and checked (a request
// that closes a cycle fails before that), and the manager's Status shows
// it, never by sleeping; its result prints after the command that
// unblocks it.
func TestScenarios(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	require.NoError(t, err)
	var parked parkedWaits
	defer lockwait.SetTestingParked(parked.see)()
	for _, e := range entries {
		if e.IsDir() { // testdata/fuzz: FuzzTxnModel's corpus
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			s := &scenario{t: t, parked: &parked}
			defer s.close()
			datadriven.RunTest(t, filepath.Join("testdata", e.Name()), func(t *testing.T, d *datadriven.TestData) string {
				return s.run(d)
			})
		})
	}
}

type pendingOp struct {
	txn  string
	what string
	done chan string
}

// parkedWaits counts, per transaction, the waiters asleep in Wait
// whose waits had not ended when they were about to sleep.
type parkedWaits struct {
	mu sync.Mutex // guards the fields below
	// asleep are the waiters seen about to sleep while still waiting.
	asleep map[*lockwait.Waiter]txnlock.TxnID
	n      map[txnlock.TxnID]int
}

func (p *parkedWaits) see(w *lockwait.Waiter, sleeps bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asleep == nil {
		p.asleep, p.n = map[*lockwait.Waiter]txnlock.TxnID{}, map[txnlock.TxnID]int{}
	}
	switch txn, ok := p.asleep[w]; {
	case sleeps && w.Active():
		p.asleep[w] = w.Txn()
		p.n[w.Txn()]++
	case !sleeps && ok:
		delete(p.asleep, w)
		p.n[txn]--
	}
}

// waiting reports whether a waiter of txn is asleep in Wait.
func (p *parkedWaits) waiting(txn txnlock.TxnID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[txn] > 0
}

type scenario struct {
	t       *testing.T
	parked  *parkedWaits
	e       *testEnv
	det     *deadlock.Detector
	txns    map[string]*Txn
	names   map[txnlock.TxnID]string
	pending []*pendingOp
}

func (s *scenario) close() {
	for _, p := range s.pending {
		s.t.Errorf("%s still waiting at the end: %s", p.txn, p.what)
	}
	if s.det != nil {
		s.det.Close()
	}
}

func (s *scenario) run(d *datadriven.TestData) string {
	var out strings.Builder
	arg := func(i int) string { // i counts words after the command from 1
		if i > len(d.CmdArgs) {
			d.Fatalf(s.t, "%s: missing argument %d", d.Cmd, i)
		}
		return d.CmdArgs[i-1].Key
	}
	mode := func(i int) txnlock.Mode {
		switch arg(i) {
		case "S":
			return txnlock.Shared
		case "X":
			return txnlock.Exclusive
		}
		d.Fatalf(s.t, "bad mode %q", arg(i))
		return 0
	}
	rng := func() txnlock.Range {
		r, err := txnlock.Inclusive([]byte(arg(2)), []byte(arg(3)))
		if err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		return r
	}
	txn := func() *Txn {
		x, ok := s.txns[arg(1)]
		if !ok {
			d.Fatalf(s.t, "unknown transaction %q", arg(1))
		}
		return x
	}
	switch d.Cmd {
	case "new":
		var kind string
		d.ScanArgs(s.t, "kind", &kind)
		if s.det != nil {
			s.det.Close()
		}
		det, err := deadlock.New(deadlock.Options{})
		if err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		s.det = det
		s.e = openMemWith(s.t, managerKind(kind), newManager(s.t, managerKind(kind), txnlock.WaitForever, det))
		s.txns, s.names = map[string]*Txn{}, map[txnlock.TxnID]string{}
		return "ok"
	case "begin":
		x, err := s.e.db.Begin(nil)
		if err != nil {
			return err.Error()
		}
		s.txns[arg(1)], s.names[x.ID()] = x, arg(1)
		return "ok"
	case "status":
		st := s.e.mgr.Status()
		for _, l := range st.Locks {
			fmt.Fprintf(&out, "lock %v %v held by %s\n", l.Range, l.Mode, s.nameList(l.Holders))
		}
		for _, w := range st.Waits {
			fmt.Fprintf(&out, "wait %s for %v %v blocked by %s\n", s.names[w.Txn], w.Range, w.Mode, s.nameList(w.Blockers))
		}
		if out.Len() == 0 {
			return "no locks"
		}
		return strings.TrimSuffix(out.String(), "\n")
	case "requests":
		return fmt.Sprint(txn().LockRequests())
	}
	x := txn()
	var op func() string
	switch d.Cmd {
	case "get":
		op = func() string { return s.value(x.Get(txnlock.DefaultColumnFamily, []byte(arg(2)))) }
	case "gfu":
		op = func() string {
			return s.value(x.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte(arg(2)), mode(3)))
		}
	case "put":
		op = func() string { return s.result(x.Put(bg, txnlock.DefaultColumnFamily, []byte(arg(2)), []byte(arg(3)))) }
	case "delete":
		op = func() string { return s.result(x.Delete(bg, txnlock.DefaultColumnFamily, []byte(arg(2)))) }
	case "scan", "scanfu":
		r := rng()
		var m txnlock.Mode
		if d.Cmd == "scanfu" {
			m = mode(4)
		}
		op = func() string {
			var kv []string
			fn := func(k, v []byte) bool { kv = append(kv, string(k)+"="+string(v)); return true }
			var err error
			if d.Cmd == "scan" {
				err = x.Scan(txnlock.DefaultColumnFamily, r, fn)
			} else {
				err = x.ScanForUpdate(bg, txnlock.DefaultColumnFamily, r, m, fn)
			}
			if err != nil {
				return s.result(err)
			}
			return "[" + strings.Join(kv, " ") + "]"
		}
	case "lockrange":
		r, m := rng(), mode(4)
		op = func() string { return s.result(x.LockRange(bg, txnlock.DefaultColumnFamily, r, m)) }
	case "commit":
		op = func() string { return s.result(x.Commit()) }
	case "rollback":
		op = func() string { return s.result(x.Rollback()) }
	default:
		d.Fatalf(s.t, "unknown command %q", d.Cmd)
	}
	p := &pendingOp{txn: arg(1), what: d.Pos, done: make(chan string, 1)}
	go func() { p.done <- op() }()
	fmt.Fprintf(&out, "%s: %s", p.txn, s.settle(p))
	// The command may have released locks others wait for.
	kept := s.pending[:0]
	for _, q := range s.pending {
		if r := s.settle(q); !strings.HasPrefix(r, "waiting for") {
			fmt.Fprintf(&out, "\n%s: %s (was waiting)", q.txn, r)
		} else {
			kept = append(kept, q)
		}
	}
	s.pending = kept
	return out.String()
}

// settle returns p's result once it finished, or "waiting for [...]" if
// the manager shows its transaction waiting (p then stays pending).
func (s *scenario) settle(p *pendingOp) string {
	id := s.txns[p.txn].ID()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case r := <-p.done:
			return r
		default:
		}
		if !s.parked.waiting(id) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for _, w := range s.e.mgr.Status().Waits {
			if w.Txn == id {
				if !slices.Contains(s.pending, p) {
					s.pending = append(s.pending, p)
				}
				return "waiting for " + s.nameList(w.Blockers)
			}
		}
		time.Sleep(100 * time.Microsecond)
	}
	s.t.Fatalf("%s neither finished nor waited", p.txn)
	return ""
}

func (s *scenario) nameList(ids []txnlock.TxnID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = s.names[id]
	}
	slices.Sort(names)
	return "[" + strings.Join(names, " ") + "]"
}

func (s *scenario) value(v []byte, found bool, err error) string {
	if err != nil {
		return s.result(err)
	}
	if !found {
		return "<none>"
	}
	return string(v)
}

// result renders an error by its sentinel, so the output is stable.
func (s *scenario) result(err error) string {
	for _, e := range []error{ErrTxnDone, ErrClosed, txnlock.ErrDeadlock, txnlock.ErrLockTimeout, txnlock.ErrRangeNotSupported, txnlock.ErrInvalidRange} {
		if errors.Is(err, e) {
			return "error: " + e.Error()
		}
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}
