package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"time"

	"github.com/txnlock/txnlock"
)

// link keeps the node's stream to the elected detector observed: it dials
// it, sends a snapshot of the node's exported waits, then deltas every
// half Delay and a snapshot every SnapshotInterval, and answers the
// detector's confirms and fails. A new detector, or a broken stream, ends
// the stream; the next one starts with a snapshot.
func (n *Node) link() {
	defer n.wg.Done()
	var cur leader
	for {
		if cur.epoch == 0 {
			select {
			case <-n.ctx.Done():
				return
			case cur = <-n.leaderCh:
			}
		}
		n.mu.Lock()
		n.mu.epoch = cur.epoch
		n.mu.Unlock()
		next, ok := n.stream(cur)
		if !ok {
			return
		}
		if next.epoch != 0 {
			cur = next
			continue
		}
		select { // the stream broke: dial again, unless the detector changed
		case <-n.ctx.Done():
			return
		case cur = <-n.leaderCh:
		case <-time.After(retryPause):
		}
	}
}

// stream runs one stream to l until it breaks (zero leader returned), a
// new detector is observed (returned), or the node closes (false).
func (n *Node) stream(l leader) (leader, bool) {
	c, err := n.dial(l.addr)
	if err != nil {
		return leader{}, n.ctx.Err() == nil
	}
	sc := newConn(c)
	defer func() {
		_ = sc.close()
		n.mu.Lock()
		n.mu.connected, n.mu.exported = false, 0
		n.mu.Unlock()
	}()
	if sc.send(&message{Epoch: l.epoch, Kind: kindHello, Node: n.opts.NodeID}) != nil {
		return leader{}, true
	}
	n.mu.Lock()
	n.mu.connected = true
	n.mu.Unlock()
	broken := make(chan struct{})
	go func() {
		defer close(broken)
		n.serveDetector(sc, l.epoch)
	}()
	defer func() { _ = sc.close(); <-broken }()

	ex := exporter{n: n}
	tick := time.NewTicker(max(n.opts.Delay/2, time.Millisecond))
	defer tick.Stop()
	lastSnapshot := time.Time{}
	for {
		now := n.opts.Local.Clock.Now()
		full := now.Sub(lastSnapshot) >= n.opts.SnapshotInterval
		if m := ex.next(full); m != nil {
			m.Epoch = l.epoch
			if sc.send(m) != nil {
				return leader{}, true
			}
			if full {
				lastSnapshot = now
				n.c.snapshots.Add(1)
			} else {
				n.c.deltas.Add(1)
			}
		}
		select {
		case <-n.ctx.Done():
			return leader{}, false
		case <-broken:
			return leader{}, true
		case nl := <-n.leaderCh:
			if nl != l {
				return nl, true
			}
		case <-tick.C:
			n.waits.advance()
		}
	}
}

// dialTimeout bounds the connection to the detector.
const dialTimeout = time.Second

func (n *Node) dial(addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(n.ctx, dialTimeout)
	defer cancel()
	dial := n.opts.Dial
	if dial == nil {
		d := net.Dialer{Timeout: dialTimeout}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	c, err := dial(ctx, addr)
	if err != nil || n.opts.ClientTLS == nil {
		return c, err
	}
	cfg := n.opts.ClientTLS
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// exporter computes what the node sends: the waits reported at least
// Delay ago (exportAge ticks), with whom each waits for now.
type exporter struct {
	n    *Node
	sent map[uint64]wait // what the detector has of the node's waits
}

// next returns a snapshot if full, else a delta from what was sent, or
// nil if nothing changed.
func (ex *exporter) next(full bool) *message {
	n := ex.n
	cur := map[uint64]wait{}
	var dropped uint64
	for _, r := range n.waits.exportable() {
		to, ok := n.waits.waitsFor(r)
		if !ok || len(to) == 0 {
			continue
		}
		if len(cur) >= n.opts.MaxExport {
			dropped++
			continue
		}
		slices.Sort(to)
		w := wait{Seq: r.seq, Txn: r.txn, To: to}
		if n.opts.Priority != nil {
			w.Priority = n.opts.Priority(r.txn)
		}
		cur[r.seq] = w
	}
	n.c.dropped.Add(dropped)
	n.mu.Lock()
	n.mu.exported = len(cur)
	n.mu.Unlock()
	m := &message{Dropped: n.c.dropped.Load()}
	if full {
		m.Kind = kindSnapshot
		for _, w := range cur {
			m.Waits = append(m.Waits, w)
		}
	} else {
		m.Kind = kindDelta
		for seq, w := range cur {
			if old, ok := ex.sent[seq]; !ok || !slices.Equal(old.To, w.To) || old.Priority != w.Priority {
				m.Waits = append(m.Waits, w)
			}
		}
		for seq := range ex.sent {
			if _, ok := cur[seq]; !ok {
				m.Gone = append(m.Gone, seq)
			}
		}
		if len(m.Waits) == 0 && len(m.Gone) == 0 {
			ex.sent = cur
			return nil
		}
	}
	ex.sent = cur
	return m
}

// serveDetector answers the detector's confirms and fails on sc until it
// breaks. A message of another epoch than the stream's is refused.
func (n *Node) serveDetector(sc *conn, epoch int64) {
	for {
		m, err := sc.recv()
		if err != nil {
			return
		}
		n.mu.Lock()
		cur := n.mu.epoch
		n.mu.Unlock()
		if m.Epoch != epoch || cur != epoch {
			n.c.stale.Add(1)
			continue
		}
		var a *message
		switch m.Kind {
		case kindConfirm:
			a = n.confirm(m)
		case kindFail:
			a = &message{Kind: kindAnswer, ID: m.ID, OK: n.fail(m.Deadlock)}
		default:
			return
		}
		a.Epoch = epoch
		if sc.send(a) != nil {
			return
		}
	}
}

// confirm reads each edge asked about against the live lock table, as the
// local detector confirms: the wait (by its number) still waits, and
// waits directly (Waiter.WaitsFor) for each transaction listed.
func (n *Node) confirm(m *message) *message {
	a := &message{Kind: kindAnswer, ID: m.ID, OK: true}
	for _, c := range m.Check {
		r, ok := n.waits.get(c.Txn, c.Seq)
		if !ok {
			a.OK = false
			break
		}
		to, ok := n.waits.waitsFor(r)
		e, live := n.waits.describe(r)
		if !ok || !live {
			a.OK = false
			break
		}
		for _, t := range c.To {
			if !slices.Contains(to, t) {
				a.OK = false
			}
		}
		slices.Sort(to)
		e.Blockers = to
		a.Entries = append(a.Entries, e)
	}
	if !a.OK {
		a.Entries = nil
	}
	return a
}

// fail fails the victim's wait with the deadlock, if it still waits.
func (n *Node) fail(d *wireDeadlock) bool {
	if d == nil {
		return false
	}
	r, ok := n.waits.get(d.Victim, d.Wait)
	if !ok {
		return false
	}
	err := d.toError()
	if !n.waits.fail(r, err) {
		return false
	}
	n.c.victims.Add(1)
	n.remember(err)
	return true
}

func (d *wireDeadlock) toError() *DeadlockError {
	e := &DeadlockError{
		DeadlockError: &txnlock.DeadlockError{Victim: d.Victim, Time: d.Time},
		Nodes:         d.Nodes,
		Epoch:         d.Epoch,
	}
	for _, c := range d.Cycle {
		e.Cycle = append(e.Cycle, txnlock.CycleEntry{Txn: c.Txn, Lock: c.Lock.lockRef(), Blockers: c.Blockers, LocksHeld: c.LocksHeld, Since: c.Since})
	}
	return e
}
