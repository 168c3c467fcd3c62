package cluster

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, but for the idle
// HTTP keep-alive connections between embedded etcd members, which the
// members leave to the runtime when they close (the package uses no HTTP).
func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) != "" {
		os.Exit(nodeMain())
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"))
}

// A cycle of n transactions, each holding a key on its own node and
// waiting for the next one's key on the next node: no node sees a cycle,
// the elected detector does, and exactly one transaction fails, with a
// *DeadlockError naming the nodes, within the lock timeout (the lease
// TTL); the others are granted once the victim rolls back.
func TestCrossNodeCycles(t *testing.T) {
	ec := startEtcd(t, 3)
	nodes := []*testNode{join(t, ec, "a", nil), join(t, ec, "b", nil), join(t, ec, "c", nil)}
	connected(t, nodes...)
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			base := txnlock.TxnID(size * 100)
			key := func(i int) string { return fmt.Sprintf("k%d-%d", size, i) }
			for i := range size {
				require.NoError(t, nodes[i].lock(base+txnlock.TxnID(i), key(i), txnlock.Exclusive))
			}
			victimsBefore := totalVictims(nodes)
			type result struct {
				i   int
				err error
			}
			results := make(chan result, size)
			for i := range size {
				next := (i + 1) % size
				ch := nodes[next].goLock(base+txnlock.TxnID(i), key(next))
				go func() { results <- result{i, <-ch} }()
				if i < size-1 { // the last wait closes the cycle
					nodes[next].waiting(t, base+txnlock.TxnID(i))
				}
			}
			first := <-results
			require.ErrorIs(t, first.err, txnlock.ErrDeadlock, "txn %d", first.i)
			var de *DeadlockError
			require.True(t, errors.As(first.err, &de))
			require.Len(t, de.Cycle, size)
			require.Len(t, de.Nodes, size)
			require.Equal(t, base+txnlock.TxnID(first.i), de.Victim)
			for i := range size {
				require.Contains(t, de.Nodes, nodes[i].ID())
			}
			// The victim rolls back; every other wait is granted, in turn.
			for _, n := range nodes {
				n.m.UnlockAll(de.Victim)
			}
			for range size - 1 {
				r := <-results
				require.NoError(t, r.err, "txn %d", r.i)
				for _, n := range nodes {
					n.m.UnlockAll(base + txnlock.TxnID(r.i))
				}
			}
			for i := range size {
				for _, n := range nodes {
					n.m.UnlockAll(base + txnlock.TxnID(i))
				}
			}
			require.EqualValues(t, 1, totalVictims(nodes)-victimsBefore)
		})
	}
}

func totalVictims(nodes []*testNode) uint64 {
	var v uint64
	for _, n := range nodes {
		v += n.Stats().Victims
	}
	return v
}

// A node id already live in the cluster is refused.
func TestDuplicateNode(t *testing.T) {
	ec := startEtcd(t, 1)
	join(t, ec, "a", nil)
	_, err := Join(t.Context(), Options{NodeID: "a", Client: ec.client(t), ListenAddr: "127.0.0.1:0"})
	require.ErrorIs(t, err, ErrDuplicateNode)
}
