package cluster

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// A stream that opens for another epoch than the elected detector's is
// refused and counted, and so is a message of another protocol version.
func TestStaleEpochRefused(t *testing.T) {
	ec := startEtcd(t, 1)
	a := join(t, ec, "a", nil)
	connected(t, a)
	epoch := a.Stats().Epoch
	for _, m := range []*message{
		{Epoch: epoch - 1, Kind: kindHello, Node: "a"},
		{Epoch: epoch + 1, Kind: kindHello, Node: "a"},
	} {
		c, err := net.Dial("tcp", a.Addr())
		require.NoError(t, err)
		sc := newConn(c)
		require.NoError(t, sc.send(m))
		_, err = sc.recv() // the detector closes the stream
		require.Error(t, err)
		require.NoError(t, sc.close())
	}
	require.EqualValues(t, 2, a.Stats().Stale)

	c, err := net.Dial("tcp", a.Addr())
	require.NoError(t, err)
	_, err = c.Write([]byte(`{"v":2,"epoch":1,"kind":"hello","node":"a"}` + "\n"))
	require.NoError(t, err)
	_, err = newConn(c).recv()
	require.Error(t, err)
	require.NoError(t, c.Close())
	require.EqualValues(t, 2, a.Stats().Stale)
	require.True(t, a.Stats().Connected)
}

// A node refuses the detector's messages of another epoch than the
// stream's, and answers those of its own: here the detector is the test,
// elected in etcd before the node joins.
func TestNodeRefusesStaleEpoch(t *testing.T) {
	ec := startEtcd(t, 1)
	cli := ec.client(t)
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	e := concurrency.NewElection(s, DefaultPrefix+"election")
	require.NoError(t, e.Campaign(context.Background(), ln.Addr().String()))
	epoch := e.Rev()

	b := join(t, ec, "b", nil)
	c, err := ln.Accept()
	require.NoError(t, err)
	sc := newConn(c)
	defer sc.close()
	hello, err := sc.recv()
	require.NoError(t, err)
	require.Equal(t, kindHello, hello.Kind)
	require.Equal(t, epoch, hello.Epoch)

	require.NoError(t, sc.send(&message{Version: protocolVersion, Epoch: epoch + 1, Kind: kindConfirm, ID: 1}))
	require.NoError(t, sc.send(&message{Version: protocolVersion, Epoch: epoch, Kind: kindConfirm, ID: 2}))
	for {
		m, err := sc.recv()
		require.NoError(t, err)
		if m.Kind == kindAnswer {
			require.EqualValues(t, 2, m.ID, "only the message of the stream's epoch is answered")
			require.Equal(t, epoch, m.Epoch)
			break
		}
	}
	require.EqualValues(t, 1, b.Stats().Stale)
}
