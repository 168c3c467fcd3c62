package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// etcdCluster is an embedded etcd of several members on loopback, with
// fast ticks (10 ms) and elections (100 ms).
type etcdCluster struct {
	members   []*embed.Etcd
	endpoints []string
	stopped   map[*embed.Etcd]bool // members closed
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func startEtcd(t testing.TB, size int) *etcdCluster {
	t.Helper()
	ec := &etcdCluster{stopped: map[*embed.Etcd]bool{}}
	var cfgs []*embed.Config
	var initial []string
	for i := range size {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.TickMs, cfg.ElectionMs = 10, 100
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		peer, _ := url.Parse("http://" + freePort(t))
		client, _ := url.Parse("http://" + freePort(t))
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
		initial = append(initial, cfg.Name+"="+peer.String())
		ec.endpoints = append(ec.endpoints, client.String())
		cfgs = append(cfgs, cfg)
	}
	starts := make(chan error, size)
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = t.Name()
		go func() {
			e, err := embed.StartEtcd(cfg)
			if err == nil {
				select {
				case <-e.Server.ReadyNotify():
				case <-time.After(30 * time.Second): // an external process: a bounded wait
					err = fmt.Errorf("etcd member %s not ready", cfg.Name)
				}
				ec.add(e)
			}
			starts <- err
		}()
	}
	for range size {
		require.NoError(t, <-starts)
	}
	t.Cleanup(ec.close)
	return ec
}

var membersMu = make(chan struct{}, 1)

func (ec *etcdCluster) add(e *embed.Etcd) {
	membersMu <- struct{}{}
	ec.members = append(ec.members, e)
	<-membersMu
}

func (ec *etcdCluster) close() {
	for _, e := range ec.members {
		ec.stop(e)
	}
}

// stop closes member e, once.
func (ec *etcdCluster) stop(e *embed.Etcd) {
	if !ec.stopped[e] {
		ec.stopped[e] = true
		e.Close()
	}
}

func (ec *etcdCluster) client(t testing.TB) *clientv3.Client {
	cli, err := clientv3.New(clientConfig(ec.endpoints))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testNode is a node and its point lock manager.
type testNode struct {
	*Node
	cli *clientv3.Client
	m   *pointlock.Manager
}

// lockTimeout is the managers' lock-wait timeout in the tests: a cycle
// not broken within it ends by timeout, which the tests tell apart.
const lockTimeout = 2 * time.Second

func join(t testing.TB, ec *etcdCluster, id string, tune func(*Options)) *testNode {
	t.Helper()
	cli := ec.client(t)
	opts := Options{NodeID: id, Client: cli, ListenAddr: "127.0.0.1:0", LeaseTTL: 2}
	if tune != nil {
		tune(&opts)
	}
	n, err := Join(context.Background(), opts)
	require.NoError(t, err)
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: n, LockTimeout: lockTimeout}})
	require.NoError(t, err)
	tn := &testNode{Node: n, cli: cli, m: m}
	t.Cleanup(tn.close)
	return tn
}

func (tn *testNode) close() {
	_ = tn.m.Close()
	_ = tn.Node.Close()
}

// lock locks key on the node for txn.
func (tn *testNode) lock(txn txnlock.TxnID, key string, mode txnlock.Mode) error {
	return tn.m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: txnlock.Point([]byte(key)), Mode: mode})
}

// goLock locks in a goroutine; the result comes on the channel.
func (tn *testNode) goLock(txn txnlock.TxnID, key string) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- tn.lock(txn, key, txnlock.Exclusive) }()
	return ch
}

// waitFor polls cond for up to a bound: the nodes are distinct processes
// in spirit, the cluster's moves (an election, a stream) are external.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// connected waits until every node streams to one elected detector, and
// returns the leader.
func connected(t testing.TB, nodes ...*testNode) *testNode {
	t.Helper()
	var lead *testNode
	waitFor(t, "an elected detector and every node's stream", func() bool {
		lead = nil
		var epoch int64
		for _, n := range nodes {
			st := n.Stats()
			if !st.Connected || st.Epoch == 0 || (epoch != 0 && st.Epoch != epoch) {
				return false
			}
			epoch = st.Epoch
			if st.Leader {
				lead = n
			}
		}
		if lead == nil {
			return false
		}
		lead.mu.Lock()
		det := lead.mu.det
		lead.mu.Unlock()
		if det == nil {
			return false
		}
		det.mu.Lock()
		defer det.mu.Unlock()
		return len(det.peers) == len(nodes)
	})
	return lead
}

// waiting waits until txn waits on the node.
func (tn *testNode) waiting(t testing.TB, txn txnlock.TxnID) {
	waitFor(t, fmt.Sprintf("%s to wait on %s", txn, tn.ID()), func() bool {
		for _, w := range tn.m.Status().Waits {
			if w.Txn == txn {
				return true
			}
		}
		return false
	})
}

// clientConfig is the etcd client's configuration in the tests: gRPC
// keepalives find a dead connection (a blackholed link), and the client
// reconnects to another member, within a fraction of a node's lease.
func clientConfig(endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    500 * time.Millisecond,
		DialKeepAliveTimeout: 500 * time.Millisecond,
		// Reconnect to another member within a fraction of the lease.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 300 * time.Millisecond},
			MinConnectTimeout: 300 * time.Millisecond,
		})},
		Logger: zap.NewNop(),
	}
}
