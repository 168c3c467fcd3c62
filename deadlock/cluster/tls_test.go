package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// testTLS returns a server configuration with a certificate for
// 127.0.0.1, made for the test, and a client configuration that trusts it
// alone.
func testTLS(t *testing.T) (server, client *tls.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "txnlock cluster test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS13}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	return server, client
}

// The nodes' streams to the elected detector over TLS carry a cross-node
// cycle to its victim, and the detector takes no other stream.
func TestStreamTLS(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	ec := startEtcd(t, 1)
	tune := func(o *Options) { o.ServerTLS, o.ClientTLS = serverTLS, clientTLS }
	a := join(t, ec, "a", tune)
	waitFor(t, "a to lead", func() bool { return a.Stats().Leader })
	b := join(t, ec, "b", tune)
	connected(t, a, b)

	require.NoError(t, a.lock(1, "x", txnlock.Exclusive))
	require.NoError(t, b.lock(2, "y", txnlock.Exclusive))
	w1 := b.goLock(1, "y")
	b.waiting(t, 1)
	w2 := a.goLock(2, "x")
	require.ErrorIs(t, <-w2, txnlock.ErrDeadlock)
	require.NoError(t, a.m.UnlockAll(2))
	require.NoError(t, b.m.UnlockAll(2))
	require.NoError(t, <-w1)
	require.NoError(t, a.m.UnlockAll(1))
	require.NoError(t, b.m.UnlockAll(1))

	// The detector's listener speaks TLS only: a client that does not
	// trust its certificate fails the handshake, and a plain stream's
	// hello gets no answer.
	_, untrusting := testTLS(t)
	_, err := tls.Dial("tcp", a.Addr(), untrusting)
	require.ErrorContains(t, err, "certificate")
	plain, err := net.Dial("tcp", a.Addr())
	require.NoError(t, err)
	sc := newConn(plain)
	require.NoError(t, sc.send(&message{Version: protocolVersion, Epoch: a.Stats().Epoch, Kind: kindHello, Node: "b"}))
	_, err = sc.recv()
	require.Error(t, err)
	require.NoError(t, sc.close())
}
