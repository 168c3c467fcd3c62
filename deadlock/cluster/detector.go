package cluster

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// detector is the elected detector's state, on the node that won the
// election, for one epoch: the nodes' streams and the union of their
// exported waits, which it searches for cycles across nodes.
type detector struct {
	n     *Node
	epoch int64
	kick  chan struct{} // a node's waits changed (capacity 1)
	wg    sync.WaitGroup
	ctx   context.Context

	// mu guards peers, nextID and each peer's waits and pending.
	mu     sync.Mutex
	peers  map[string]*peer
	nextID uint64
}

// peer is one node's stream and what it exported.
type peer struct {
	id      string
	c       *conn
	waits   map[uint64]wait
	dropped uint64
	pending map[uint64]chan *message // answers awaited, by message ID
}

func newDetector(n *Node, epoch int64) *detector {
	return &detector{n: n, epoch: epoch, kick: make(chan struct{}, 1), peers: map[string]*peer{}}
}

// run serves as the elected detector until ctx ends: it searches the
// union graph every half Delay and whenever a node's waits change, and
// drops the waits of nodes whose registration leaves etcd.
func (d *detector) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.watchNodes(ctx)
	}()
	tick := time.NewTicker(max(d.n.opts.Delay/2, time.Millisecond))
	defer tick.Stop()
	for ctx.Err() == nil {
		d.pass(ctx)
		select {
		case <-ctx.Done():
		case <-d.kick:
		case <-tick.C:
		}
	}
	cancel()
	d.mu.Lock()
	for _, p := range d.peers {
		_ = p.c.close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// watchNodes drops a node's stream and waits when its registration
// leaves etcd (its lease expired or was revoked).
func (d *detector) watchNodes(ctx context.Context) {
	prefix := d.n.nodesPrefix()
	for ctx.Err() == nil {
		wch := d.n.opts.Client.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix())
		for resp := range wch {
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					d.drop(strings.TrimPrefix(string(ev.Kv.Key), prefix), nil)
				}
			}
		}
	}
}

// serve takes a new connection: it reads the hello, refuses a stream for
// another epoch or from a node not registered, and else reads the node's
// messages until the stream breaks. It reports whether it took c.
func (d *detector) serve(c net.Conn) bool {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		sc := newConn(c)
		_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
		m, err := sc.recv()
		_ = c.SetReadDeadline(time.Time{})
		if err != nil || m.Kind != kindHello || m.Epoch != d.epoch || !d.registered(ctx, m.Node) {
			if err == nil && m.Epoch != d.epoch {
				d.n.c.stale.Add(1)
			}
			_ = sc.close()
			return
		}
		p := &peer{id: m.Node, c: sc, waits: map[uint64]wait{}, pending: map[uint64]chan *message{}}
		d.mu.Lock()
		if ctx.Err() != nil {
			d.mu.Unlock()
			_ = sc.close()
			return
		}
		if old := d.peers[p.id]; old != nil {
			d.dropLocked(old)
		}
		d.peers[p.id] = p
		d.mu.Unlock()
		d.read(p)
		d.drop(p.id, p)
	}()
	return true
}

func (d *detector) registered(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	resp, err := d.n.opts.Client.Get(ctx, d.n.nodeKey(id))
	return err == nil && len(resp.Kvs) == 1
}

// read applies p's messages until its stream breaks.
func (d *detector) read(p *peer) {
	for {
		m, err := p.c.recv()
		if err != nil {
			return
		}
		if m.Epoch != d.epoch {
			d.n.c.stale.Add(1)
			continue
		}
		d.mu.Lock()
		switch m.Kind {
		case kindSnapshot:
			p.waits = make(map[uint64]wait, len(m.Waits))
			fallthrough
		case kindDelta:
			for _, w := range m.Waits {
				p.waits[w.Seq] = w
			}
			for _, seq := range m.Gone {
				delete(p.waits, seq)
			}
			p.dropped = m.Dropped
		case kindAnswer:
			if ch := p.pending[m.ID]; ch != nil {
				delete(p.pending, m.ID)
				ch <- m
			}
		}
		d.mu.Unlock()
		if m.Kind != kindAnswer {
			select {
			case d.kick <- struct{}{}:
			default:
			}
		}
	}
}

// drop forgets node id's stream and waits, if p is its stream (any, if p
// is nil).
func (d *detector) drop(id string, p *peer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur := d.peers[id]; cur != nil && (p == nil || cur == p) {
		d.dropLocked(cur)
	}
}

func (d *detector) dropLocked(p *peer) {
	_ = p.c.close()
	delete(d.peers, p.id)
	for id, ch := range p.pending {
		delete(p.pending, id)
		close(ch)
	}
}

// ask sends m to node id and returns its answer, or nil if none came
// within ConfirmTimeout.
func (d *detector) ask(ctx context.Context, id string, m *message) *message {
	d.mu.Lock()
	p := d.peers[id]
	if p == nil {
		d.mu.Unlock()
		return nil
	}
	d.nextID++
	m.ID, m.Epoch = d.nextID, d.epoch
	ch := make(chan *message, 1)
	p.pending[m.ID] = ch
	d.mu.Unlock()
	if p.c.send(m) != nil {
		d.drop(id, p)
		return nil
	}
	t := time.NewTimer(d.n.opts.ConfirmTimeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a
	case <-t.C:
	case <-ctx.Done():
	}
	d.mu.Lock()
	delete(p.pending, m.ID)
	d.mu.Unlock()
	return nil
}
