package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"
)

// startProxy starts etcd's test proxy from a free loopback port to "to".
func startProxy(t testing.TB, to string) (proxy.Server, string) {
	t.Helper()
	from := url.URL{Scheme: "tcp", Host: freePort(t)}
	p := proxy.NewServer(proxy.ServerConfig{Logger: zap.NewNop(), From: from, To: url.URL{Scheme: "tcp", Host: to}})
	<-p.Ready()
	t.Cleanup(func() { _ = p.Close() })
	return p, from.Host
}

// edges renders waits as "txn->to,to" lines, sorted.
func edges(ws map[uint64]wait) []string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%d->%v", w.Txn, w.To))
	}
	slices.Sort(out)
	return out
}

// exports is what n exports now: its waits reported Delay ago or before,
// and whom they wait for.
func (tn *testNode) exports() []string {
	ws := map[uint64]wait{}
	for _, r := range tn.waits.exportable() {
		if to, ok := tn.waits.waitsFor(r); ok && len(to) > 0 {
			slices.Sort(to)
			ws[r.seq] = wait{Seq: r.seq, Txn: r.txn, To: to}
		}
	}
	return edges(ws)
}

// graph is the elected detector's copy of each node's waits, if tn is it.
func (tn *testNode) graph() map[string][]string {
	tn.mu.Lock()
	det := tn.mu.det
	tn.mu.Unlock()
	if det == nil {
		return nil
	}
	det.mu.Lock()
	defer det.mu.Unlock()
	g := map[string][]string{}
	for id, p := range det.peers {
		g[id] = edges(p.waits)
	}
	return g
}

// A node whose stream to the elected detector is blackholed: its
// cross-node waits end by their timeout; once the link heals, the
// detector's graph equals the nodes' exports within a snapshot period
// and D, and a new cycle is broken.
func TestStreamBlackholed(t *testing.T) {
	ec := startEtcd(t, 3)
	a := join(t, ec, "a", nil)
	waitFor(t, "a to lead", func() bool { return a.Stats().Leader })
	link, linkAddr := startProxy(t, a.Addr())
	b := join(t, ec, "b", func(o *Options) {
		o.Dial = func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", linkAddr)
		}
	})
	c := join(t, ec, "c", nil)
	connected(t, a, b, c)

	link.BlackholeTx()
	link.BlackholeRx()
	require.NoError(t, b.lock(1, "x", txnlock.Exclusive))
	require.NoError(t, c.lock(2, "y", txnlock.Exclusive))
	w1, w2 := c.goLock(1, "y"), b.goLock(2, "x")
	require.ErrorIs(t, <-w1, txnlock.ErrLockTimeout)
	require.ErrorIs(t, <-w2, txnlock.ErrLockTimeout)
	for _, n := range []*testNode{b, c} {
		require.NoError(t, n.m.UnlockAll(1))
		require.NoError(t, n.m.UnlockAll(2))
	}

	// A standing wait on each of b and c, then the link heals.
	require.NoError(t, b.lock(3, "p", txnlock.Exclusive))
	require.NoError(t, c.lock(4, "q", txnlock.Exclusive))
	w5, w6 := b.goLock(5, "p"), c.goLock(6, "q")
	b.waiting(t, 5)
	c.waiting(t, 6)
	link.UnblackholeTx()
	link.UnblackholeRx()
	waitFor(t, "the detector's graph to equal the nodes' exports", func() bool {
		want := map[string][]string{}
		for _, n := range []*testNode{a, b, c} {
			if e := n.exports(); len(e) > 0 {
				want[n.ID()] = e
			}
		}
		got := a.graph()
		maps.DeleteFunc(got, func(_ string, v []string) bool { return len(v) == 0 })
		return len(want) == 2 && fmt.Sprint(got) == fmt.Sprint(want)
	})
	for _, n := range []*testNode{b, c} {
		require.NoError(t, n.m.UnlockAll(3))
		require.NoError(t, n.m.UnlockAll(4))
	}
	require.NoError(t, <-w5)
	require.NoError(t, <-w6)
	require.NoError(t, b.m.UnlockAll(5))
	require.NoError(t, c.m.UnlockAll(6))

	// And a cycle through b is broken again.
	connected(t, a, b, c)
	require.NoError(t, b.lock(7, "r", txnlock.Exclusive))
	require.NoError(t, c.lock(8, "s", txnlock.Exclusive))
	w7 := c.goLock(7, "s")
	c.waiting(t, 7)
	w8 := b.goLock(8, "r")
	require.ErrorIs(t, <-w8, txnlock.ErrDeadlock) // the younger of the two
	require.NoError(t, b.m.UnlockAll(8))
	require.NoError(t, c.m.UnlockAll(8))
	require.NoError(t, <-w7)
}

// A node whose link to etcd is blackholed loses its lease, and the
// elected detector drops its waits.
func TestEtcdLinkBlackholed(t *testing.T) {
	ec := startEtcd(t, 1)
	a := join(t, ec, "a", nil)
	waitFor(t, "a to lead", func() bool { return a.Stats().Leader })
	link, linkAddr := startProxy(t, ec.members[0].Config().ListenClientUrls[0].Host)
	cli, err := clientv3.New(clientConfig([]string{"http://" + linkAddr}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	b := join(t, ec, "b", func(o *Options) { o.Client = cli; o.LeaseTTL = 1 })
	connected(t, a, b)
	require.NoError(t, b.lock(1, "x", txnlock.Exclusive))
	w := b.goLock(2, "x")
	waitFor(t, "b's wait at the detector", func() bool { return len(a.graph()["b"]) == 1 })
	link.BlackholeTx()
	link.BlackholeRx()
	waitFor(t, "b's waits to leave the detector", func() bool { return len(a.graph()["b"]) == 0 })
	require.ErrorIs(t, <-w, txnlock.ErrLockTimeout)
	require.NoError(t, b.m.UnlockAll(1))
	link.UnblackholeTx()
	link.UnblackholeRx()
}

// Stopping etcd's raft leader member hard keeps the detector and its
// epoch, and cycles are still broken.
func TestEtcdLeaderStopped(t *testing.T) {
	ec := startEtcd(t, 3)
	a, b := join(t, ec, "a", nil), join(t, ec, "b", nil)
	connected(t, a, b)
	epoch := a.Stats().Epoch
	for _, m := range ec.members {
		if m.Server.Leader() == m.Server.MemberID() {
			ec.stop(m)
		}
	}
	require.NoError(t, a.lock(1, "x", txnlock.Exclusive))
	require.NoError(t, b.lock(2, "y", txnlock.Exclusive))
	w1 := b.goLock(1, "y")
	b.waiting(t, 1)
	w2 := a.goLock(2, "x")
	require.ErrorIs(t, <-w2, txnlock.ErrDeadlock, "a: %v\nb: %v", a.Stats(), b.Stats())
	require.NoError(t, a.m.UnlockAll(2))
	require.NoError(t, b.m.UnlockAll(2))
	require.NoError(t, <-w1)
	require.Equal(t, epoch, a.Stats().Epoch)
	require.Equal(t, epoch, b.Stats().Epoch)
	require.Zero(t, a.Stats().SessionsLost+b.Stats().SessionsLost)
}

// While etcd has no quorum, a node loses its session, which its Stats
// show, and its own detector goes on breaking the cycles within it.
func TestQuorumLost(t *testing.T) {
	ec := startEtcd(t, 3)
	a := join(t, ec, "a", func(o *Options) { o.LeaseTTL = 1 })
	connected(t, a)
	require.True(t, a.Stats().Registered)
	ec.stop(ec.members[0])
	ec.stop(ec.members[1])
	waitFor(t, "a to lose its session", func() bool { return !a.Stats().Registered })

	require.NoError(t, a.lock(10, "p", txnlock.Exclusive))
	require.NoError(t, a.lock(11, "q", txnlock.Exclusive))
	w := a.goLock(10, "q")
	a.waiting(t, 10)
	err := a.lock(11, "p", txnlock.Exclusive)
	if errors.Is(err, txnlock.ErrDeadlock) {
		require.NoError(t, a.m.UnlockAll(11))
		require.NoError(t, <-w)
	} else {
		require.NoError(t, err)
		require.ErrorIs(t, <-w, txnlock.ErrDeadlock)
	}
	require.NoError(t, a.m.UnlockAll(10))
	require.NoError(t, a.m.UnlockAll(11))
	require.NotZero(t, a.Local().Stats().Deadlocks, "the local detector broke the cycle")
}
