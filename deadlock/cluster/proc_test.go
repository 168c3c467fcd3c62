package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/rangelock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The process harness: the test binary runs itself as a node process
// (nodeEnv set), which joins the cluster with a range lock manager and
// obeys commands, one JSON line each, on its standard input, answering on
// its standard output. The driver (procNode) is the test's end.

const nodeEnv = "TXNLOCK_CLUSTER_NODE"

// command is one order to a node process; the answer carries its ID.
type command struct {
	ID    uint64        `json:"id"`
	Op    string        `json:"op"` // lock, cancel, unlock, unlockall, status, stats, verdict
	Txn   txnlock.TxnID `json:"txn,omitempty"`
	Start string        `json:"start,omitempty"`
	End   string        `json:"end,omitempty"` // empty: the point Start
	Mode  txnlock.Mode  `json:"mode,omitempty"`
	OK    bool          `json:"ok,omitempty"` // verdict: let the cycle's victim fail
	// Target is the ID of the lock a cancel cancels.
	Target uint64 `json:"target,omitempty"`
}

// answer is a node process's reply to a command (ID set), or a cycle the
// process found as the elected detector, awaiting the driver's verdict
// (Cycle set).
type answer struct {
	ID       uint64       `json:"id,omitempty"`
	Err      string       `json:"err,omitempty"`
	Deadlock *cycleReport `json:"deadlock,omitempty"` // the error was a cross-node deadlock
	Timeout  bool         `json:"timeout,omitempty"`
	Waits    []waitReport `json:"waits,omitempty"`
	Stats    *Stats       `json:"stats,omitempty"`
	Cycle    *cycleReport `json:"cycle,omitempty"`
	CycleID  uint64       `json:"cycle_id,omitempty"`
}

type cycleReport struct {
	Txns   []txnlock.TxnID `json:"txns"`
	Nodes  []string        `json:"nodes"`
	Victim txnlock.TxnID   `json:"victim"`
}

type waitReport struct {
	Txn      txnlock.TxnID   `json:"txn"`
	Blockers []txnlock.TxnID `json:"blockers"`
}

func report(e *DeadlockError) *cycleReport {
	r := &cycleReport{Nodes: e.Nodes, Victim: e.Victim}
	for _, c := range e.Cycle {
		r.Txns = append(r.Txns, c.Txn)
	}
	return r
}

// nodeMain is a node process: the environment says its id, the etcd
// endpoints and its settings.
func nodeMain() int {
	env := func(k string) string { return os.Getenv(nodeEnv + "_" + k) }
	atoi := func(k string) int { v, _ := strconv.Atoi(env(k)); return v }
	cli, err := clientv3.New(clientConfig(strings.Split(env("ENDPOINTS"), ",")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cli.Close()
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	emit := func(a answer) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = out.Encode(a)
	}
	var verdictMu sync.Mutex
	verdicts := map[uint64]chan bool{}
	var cycles uint64
	opts := Options{
		NodeID:     env("ID"),
		Client:     cli,
		ListenAddr: "127.0.0.1:" + env("PORT"),
		LeaseTTL:   atoi("LEASE"),
		Delay:      time.Duration(atoi("DELAY_MS")) * time.Millisecond,
	}
	if env("HOOK") != "" {
		opts.OnCycle = func(e *DeadlockError) bool {
			verdictMu.Lock()
			cycles++
			id := cycles
			ch := make(chan bool, 1)
			verdicts[id] = ch
			verdictMu.Unlock()
			emit(answer{Cycle: report(e), CycleID: id})
			return <-ch
		}
	}
	n, err := Join(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	m, err := rangelock.New(rangelock.Options{WaitOptions: txnlock.WaitOptions{Detector: n, LockTimeout: time.Duration(atoi("TIMEOUT_MS")) * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer m.Close()
	emit(answer{Err: "ready " + n.Addr()})
	var cancelsMu sync.Mutex
	cancels := map[uint64]func(){} // cancel the lock in flight of this ID, and wait for its end
	in := bufio.NewScanner(os.Stdin)
	var wg sync.WaitGroup
	defer wg.Wait()
	for in.Scan() {
		var c command
		if json.Unmarshal(in.Bytes(), &c) != nil {
			return 1
		}
		switch c.Op {
		case "lock":
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			cancelsMu.Lock()
			cancels[c.ID] = func() { cancel(); <-done }
			cancelsMu.Unlock()
			wg.Go(func() {
				err := m.Lock(ctx, c.request())
				cancelsMu.Lock()
				delete(cancels, c.ID)
				cancelsMu.Unlock()
				cancel()
				emit(lockAnswer(c, err))
				close(done)
			})
		case "cancel": // answered once the lock's wait is over
			cancelsMu.Lock()
			cancel := cancels[c.Target]
			cancelsMu.Unlock()
			wg.Go(func() {
				if cancel != nil {
					cancel()
				}
				emit(answer{ID: c.ID})
			})
		case "unlock":
			emit(errAnswer(c.ID, m.Unlock(c.Txn, 0, c.request().Range)))
		case "unlockall":
			emit(errAnswer(c.ID, m.UnlockAll(c.Txn)))
		case "status":
			a := answer{ID: c.ID}
			for _, w := range m.Status().Waits {
				a.Waits = append(a.Waits, waitReport{Txn: w.Txn, Blockers: w.Blockers})
			}
			emit(a)
		case "stats":
			st := n.Stats()
			emit(answer{ID: c.ID, Stats: &st})
		case "verdict":
			verdictMu.Lock()
			if ch := verdicts[c.ID]; ch != nil {
				ch <- c.OK
				delete(verdicts, c.ID)
			}
			verdictMu.Unlock()
		}
	}
	return 0
}

func (c command) request() txnlock.Request {
	r := txnlock.Point([]byte(c.Start))
	if c.End != "" {
		r, _ = txnlock.NewRange(txnlock.BoundBefore([]byte(c.Start)), txnlock.BoundBefore([]byte(c.End)))
	}
	return txnlock.Request{Txn: c.Txn, Range: r, Mode: c.Mode}
}

func errAnswer(id uint64, err error) answer {
	a := answer{ID: id}
	if err != nil {
		a.Err = err.Error()
	}
	return a
}

func lockAnswer(c command, err error) answer {
	a := errAnswer(c.ID, err)
	var de *DeadlockError
	if errors.As(err, &de) {
		a.Deadlock = report(de)
	}
	a.Timeout = errors.Is(err, txnlock.ErrLockTimeout)
	return a
}

// procNode is the driver's end of a node process.
type procNode struct {
	id   string
	cmd  *exec.Cmd
	addr string
	// mu guards in (writes), next and pending.
	mu      sync.Mutex
	in      io.WriteCloser
	next    uint64
	pending map[uint64]chan answer
	cycles  chan answer // the process's cycles awaiting a verdict
	done    chan struct{}
}

// procOptions are a node process's settings.
type procOptions struct {
	lease   int // seconds
	delay   time.Duration
	timeout time.Duration // the manager's lock timeout
	hook    bool          // ask the driver before failing a victim
	port    string        // "0": any
}

func startProc(t testing.TB, ec *etcdCluster, id string, o procOptions) *procNode {
	t.Helper()
	if o.port == "" {
		o.port = "0"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	set := func(k, v string) { cmd.Env = append(cmd.Env, nodeEnv+"_"+k+"="+v) }
	cmd.Env = append(os.Environ(), nodeEnv+"=1")
	set("ID", id)
	set("ENDPOINTS", strings.Join(ec.endpoints, ","))
	set("LEASE", strconv.Itoa(o.lease))
	set("DELAY_MS", strconv.Itoa(int(o.delay/time.Millisecond)))
	set("TIMEOUT_MS", strconv.Itoa(int(o.timeout/time.Millisecond)))
	set("PORT", o.port)
	if o.hook {
		set("HOOK", "1")
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outp, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &procNode{id: id, cmd: cmd, in: in, pending: map[uint64]chan answer{}, cycles: make(chan answer, 64), done: make(chan struct{})}
	out := bufio.NewScanner(outp)
	out.Buffer(nil, 1<<24)
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		for out.Scan() {
			var a answer
			if json.Unmarshal(out.Bytes(), &a) != nil {
				continue // the test framework's own lines
			}
			switch {
			case a.Cycle != nil:
				p.cycles <- a
			case a.ID == 0:
				ready <- strings.TrimPrefix(a.Err, "ready ")
			default:
				p.mu.Lock()
				ch := p.pending[a.ID]
				delete(p.pending, a.ID)
				p.mu.Unlock()
				if ch != nil {
					ch <- a
				}
			}
		}
		p.mu.Lock()
		for id, ch := range p.pending {
			close(ch)
			delete(p.pending, id)
		}
		p.mu.Unlock()
	}()
	select {
	case p.addr = <-ready:
	case <-p.done:
		t.Fatalf("node process %s ended before it was ready", id)
	case <-time.After(30 * time.Second): // an external process: a bounded wait
		t.Fatalf("node process %s not ready", id)
	}
	t.Cleanup(p.stop)
	return p
}

// do sends c and returns the channel its answer comes on (closed if the
// process ends first).
func (p *procNode) do(c command) <-chan answer {
	ch, _ := p.send(c)
	return ch
}

// send is do, and returns the command's ID too.
func (p *procNode) send(c command) (<-chan answer, uint64) {
	ch := make(chan answer, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	c.ID = p.next
	p.pending[c.ID] = ch
	b, _ := json.Marshal(c)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		delete(p.pending, c.ID)
		close(ch)
	}
	return ch, c.ID
}

func (p *procNode) call(c command) answer { return <-p.do(c) }

func (p *procNode) verdict(id uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := json.Marshal(command{ID: id, Op: "verdict", OK: ok})
	_, _ = p.in.Write(append(b, '\n'))
}

func (p *procNode) stats() Stats {
	a := p.call(command{Op: "stats"})
	if a.Stats == nil {
		return Stats{}
	}
	return *a.Stats
}

func (p *procNode) waits() []waitReport { return p.call(command{Op: "status"}).Waits }

// kill ends the process with SIGKILL: its lease is left to expire.
func (p *procNode) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

// stop ends the process as a clean shutdown (end of input).
func (p *procNode) stop() {
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second): // an external process: a bounded wait
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = p.cmd.Wait()
}

// procsConnected waits until every node streams to one elected detector
// and returns its index.
func procsConnected(t testing.TB, nodes []*procNode) int {
	t.Helper()
	lead := -1
	waitFor(t, "an elected detector and every node's stream", func() bool {
		lead = -1
		var epoch int64
		for i, n := range nodes {
			st := n.stats()
			if !st.Connected || st.Epoch == 0 || (epoch != 0 && st.Epoch != epoch) {
				return false
			}
			epoch = st.Epoch
			if st.Leader {
				lead = i
			}
		}
		return lead >= 0
	})
	return lead
}
