package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/detect"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Node is one process's part of the cluster detector: a
// txnlock.Detector for its lock managers. It is safe for concurrent use.
type Node struct {
	// Lock order: mu, then the waits' mu, then the local detector's
	// locks, then a manager's latch.
	opts  Options
	local *deadlock.Detector
	waits *waits
	ln    net.Listener
	addr  string // what the other nodes dial

	// ctx ends the node's goroutines (Close); sessCtx, which outlives
	// them, is the sessions' own, so that a session closed on the way out
	// can still revoke its lease.
	ctx, sessCtx       context.Context
	cancel, sessCancel context.CancelFunc
	wg                 sync.WaitGroup
	// leaderCh carries the elected detector observed (coalescing).
	leaderCh chan leader

	c counters
	// testingBetweenReads, if set, runs between the two confirmation
	// reads of the elected detector (tests only).
	testingBetweenReads atomic.Pointer[func()]

	// mu guards the node's state that its goroutines change and Stats,
	// History and Close read.
	mu struct {
		sync.Mutex
		session   *concurrency.Session // nil while the node is not registered
		det       *detector            // set while the node is the elected detector
		epoch     int64                // of the elected detector observed
		connected bool
		exported  int
		history   []*DeadlockError
		closed    bool
	}
}

// counters are the node's Stats counters, each an atomic.
type counters struct {
	sessionsLost, dropped, snapshots, deltas, stale, victims atomic.Uint64
	cycles, confirmed, falseCandidates                       atomic.Uint64
}

// leader is an elected detector as observed in etcd.
type leader struct {
	addr  string
	epoch int64
}

var _ txnlock.Detector = (*Node)(nil)

// Join starts a node: it creates the node's own detector, listens on
// opts.ListenAddr, registers the node in etcd (ErrDuplicateNode if a live
// node has its id), and campaigns to be the elected detector. ctx bounds
// the registration; Close stops the node.
func Join(ctx context.Context, opts Options) (*Node, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	local, err := deadlock.New(opts.Local)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		_ = local.Close()
		return nil, fmt.Errorf("txnlock: cluster: listen: %w", err)
	}
	if opts.ServerTLS != nil {
		ln = tls.NewListener(ln, opts.ServerTLS)
	}
	n := &Node{opts: opts, local: local, waits: newWaits(local.Seam().(detect.Lister)), ln: ln, leaderCh: make(chan leader, 1)}
	n.addr = opts.AdvertiseAddr
	if n.addr == "" {
		n.addr = ln.Addr().String()
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.sessCtx, n.sessCancel = context.WithCancel(context.Background())
	s, err := n.register(ctx)
	if err != nil {
		n.cancel()
		n.sessCancel()
		_ = ln.Close()
		_ = local.Close()
		return nil, err
	}
	n.mu.session = s
	obs := concurrency.NewElection(s, n.electionPrefix())
	n.wg.Add(4)
	go n.accept()
	go n.campaign(s)
	go n.observe(obs)
	go n.link()
	return n, nil
}

// Seam connects the managers of this module to the node
// (txnlock.Detector); a manager calls it when it is created with the
// node in its WaitOptions, and a user never needs to.
func (n *Node) Seam() detect.Detector { return (*seamOf)(n) }

// Local is the node's own detector: the cycles within the node.
func (n *Node) Local() *deadlock.Detector { return n.local }

// ID is the node's id.
func (n *Node) ID() string { return n.opts.NodeID }

// Addr is the address the other nodes dial to reach the node while it is
// the elected detector.
func (n *Node) Addr() string { return n.addr }

func (n *Node) nodesPrefix() string    { return n.opts.Prefix + "nodes/" }
func (n *Node) electionPrefix() string { return n.opts.Prefix + "election" }
func (n *Node) nodeKey(id string) string {
	return n.nodesPrefix() + id
}

// register opens a session and puts the node's key under its lease,
// unless another live node holds the id.
func (n *Node) register(ctx context.Context) (*concurrency.Session, error) {
	lease, err := n.opts.Client.Grant(ctx, int64(n.opts.LeaseTTL))
	if err != nil {
		return nil, fmt.Errorf("txnlock: cluster: lease: %w", err)
	}
	s, err := concurrency.NewSession(n.opts.Client, concurrency.WithLease(lease.ID), concurrency.WithTTL(n.opts.LeaseTTL), concurrency.WithContext(n.sessCtx))
	if err != nil {
		return nil, fmt.Errorf("txnlock: cluster: session: %w", err)
	}
	key := n.nodeKey(n.opts.NodeID)
	resp, err := n.opts.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, n.addr, clientv3.WithLease(s.Lease()))).
		Commit()
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("%w: %q", ErrDuplicateNode, n.opts.NodeID)
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("txnlock: cluster: register: %w", err)
	}
	return s, nil
}

// campaign holds the node's session and runs for the elected detector
// until the session ends, then opens a new one; it serves as the detector
// while elected.
func (n *Node) campaign(s *concurrency.Session) {
	defer n.wg.Done()
	for {
		n.lead(s)
		n.mu.Lock()
		n.mu.session = nil
		n.mu.Unlock()
		_ = s.Close()
		if n.ctx.Err() != nil {
			return
		}
		n.c.sessionsLost.Add(1)
		for s = nil; s == nil; {
			var err error
			rctx, cancel := context.WithTimeout(n.ctx, time.Duration(n.opts.LeaseTTL)*time.Second)
			s, err = n.register(rctx)
			cancel()
			if n.ctx.Err() != nil {
				if s != nil {
					_ = s.Close()
				}
				return
			}
			if err != nil {
				// etcd is unreachable or the old key has not expired yet.
				select {
				case <-n.ctx.Done():
					return
				case <-time.After(retryPause):
				}
			}
		}
		n.mu.Lock()
		n.mu.session = s
		n.mu.Unlock()
	}
}

// retryPause is how long a node waits before it tries etcd or the
// detector again after a failure.
const retryPause = 100 * time.Millisecond

// lead campaigns with s and serves as the elected detector once elected,
// until s ends or the node closes.
func (n *Node) lead(s *concurrency.Session) {
	e := concurrency.NewElection(s, n.electionPrefix())
	ctx, cancel := context.WithCancel(n.ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	if err := e.Campaign(ctx, n.addr); err != nil {
		return
	}
	det := newDetector(n, e.Rev())
	n.mu.Lock()
	n.mu.det = det
	n.mu.Unlock()
	det.run(ctx)
	n.mu.Lock()
	n.mu.det = nil
	n.mu.Unlock()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
	_ = e.Resign(rctx)
	rcancel()
}

// observe follows the elected detector in etcd and passes each change to
// the link.
func (n *Node) observe(e *concurrency.Election) {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		for resp := range e.Observe(n.ctx) {
			if len(resp.Kvs) == 0 {
				continue
			}
			kv := resp.Kvs[0]
			l := leader{addr: string(kv.Value), epoch: kv.CreateRevision}
			select {
			case <-n.leaderCh:
			default:
			}
			n.leaderCh <- l
		}
		select { // the observation broke (etcd unreachable): again, shortly
		case <-n.ctx.Done():
		case <-time.After(retryPause):
		}
	}
}

// accept hands each connection to the elected detector if the node is
// it, and closes it otherwise.
func (n *Node) accept() {
	defer n.wg.Done()
	for {
		c, err := n.ln.Accept()
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		n.mu.Lock()
		det := n.mu.det
		n.mu.Unlock()
		if det == nil || !det.serve(c) {
			_ = c.Close()
		}
	}
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	st := Stats{
		Registered: n.mu.session != nil,
		Leader:     n.mu.det != nil,
		Epoch:      n.mu.epoch,
		Connected:  n.mu.connected,
		Exported:   n.mu.exported,
	}
	n.mu.Unlock()
	st.Local = n.local.Stats()
	st.SessionsLost = n.c.sessionsLost.Load()
	st.Dropped = n.c.dropped.Load()
	st.Snapshots = n.c.snapshots.Load()
	st.Deltas = n.c.deltas.Load()
	st.Stale = n.c.stale.Load()
	st.Victims = n.c.victims.Load()
	st.Cycles = n.c.cycles.Load()
	st.Confirmed = n.c.confirmed.Load()
	st.FalseCandidatesAvoided = n.c.falseCandidates.Load()
	return st
}

// History returns the most recent cross-node deadlocks whose victim
// waited on this node, oldest first (Options.HistorySize). The node's own
// deadlocks are in Local().History().
func (n *Node) History() []*DeadlockError {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*DeadlockError(nil), n.mu.history...)
}

func (n *Node) remember(e *DeadlockError) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.history = append(n.mu.history, e)
	if len(n.mu.history) > n.opts.HistorySize {
		n.mu.history = n.mu.history[len(n.mu.history)-n.opts.HistorySize:]
	}
}

// Close leaves the cluster: it stops serving as the detector, ends the
// node's stream, revokes its lease (its key and its waits leave at once)
// and closes its own detector. Close the managers first.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.mu.closed {
		n.mu.Unlock()
		return nil
	}
	n.mu.closed = true
	n.mu.Unlock()
	n.cancel()
	err := n.ln.Close()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Duration(n.opts.LeaseTTL) * time.Second):
		// A campaign cancelled on an unreachable etcd resigns with the
		// client's own context (package concurrency): it ends when that
		// request does, at the latest when the client closes.
	}
	n.sessCancel()
	return errors.Join(err, n.local.Close())
}
