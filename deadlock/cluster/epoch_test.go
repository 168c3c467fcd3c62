package cluster

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
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
