package deadlock

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// The search is checked against a brute-force reference over the exact
// waits-for relation, with no resource contraction and no marks: nodes
// are waits, and wait e leads to wait f when f's transaction blocks e's
// resource and is not e's own transaction.

type refGraph struct {
	waits []*edge
}

func (r refGraph) next(e *edge) []*edge {
	var out []*edge
	for _, f := range r.waits {
		if f.txn != e.txn && e.res.blocks(f.txn) {
			out = append(out, f)
		}
	}
	return out
}

// reaches reports whether to is reachable from any successor of from.
func (r refGraph) reaches(from, to *edge) bool {
	seen := map[*edge]bool{}
	stack := r.next(from)
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == to {
			return true
		}
		if seen[e] {
			continue
		}
		seen[e] = true
		stack = append(stack, r.next(e)...)
	}
	return false
}

func (r refGraph) hasCycle() bool {
	for _, e := range r.waits {
		if r.reaches(e, e) {
			return true
		}
	}
	return false
}

// validCycle checks a cycle against the exact relation: each wait's
// resource is blocked by the next wait's transaction, no transaction
// twice.
func validCycle(cycle []*edge) error {
	if len(cycle) < 2 {
		return fmt.Errorf("cycle of %d", len(cycle))
	}
	seen := map[txnlock.TxnID]bool{}
	for i, e := range cycle {
		n := cycle[(i+1)%len(cycle)]
		if seen[e.txn] {
			return fmt.Errorf("%v twice", e.txn)
		}
		seen[e.txn] = true
		if n.txn == e.txn || !e.res.blocks(n.txn) {
			return fmt.Errorf("%v waits for resource %d, not blocked by %v", e.txn, e.res.id, n.txn)
		}
	}
	return nil
}

type testWaiter struct{ txn txnlock.TxnID }

func (w *testWaiter) Txn() txnlock.TxnID { return w.txn }
func (w *testWaiter) Fail(error) bool    { return true }
func (w *testWaiter) Active() bool       { return true } // waits until Unblock
func (w *testWaiter) String() string     { return w.txn.String() }

// randomGraph builds a graph of nTxn transactions waiting (some in two
// places) on nRes resources, each blocked by a few random transactions
// (sometimes including its own waiters, as upgrades are).
func randomGraph(rng *rand.Rand, nTxn, nRes int) (*graph, []txnlock.Waiter) {
	g := newGraph()
	for r := 1; r <= nRes; r++ {
		var b []txnlock.TxnID
		for range rng.IntN(4) {
			b = append(b, txnlock.TxnID(1+rng.IntN(nTxn)))
		}
		g.setBlockers(g.resource(txnlock.ResourceID(r)), b)
	}
	var ws []txnlock.Waiter
	for t := 1; t <= nTxn; t++ {
		n := rng.IntN(3) // 0, 1 or 2 waits
		if n == 2 && rng.IntN(3) != 0 {
			n = 1
		}
		for range n {
			w := &testWaiter{txn: txnlock.TxnID(t)}
			g.block(txnlock.WaitEdge{Waiter: w, Resource: txnlock.ResourceID(1 + rng.IntN(nRes))})
			ws = append(ws, w)
		}
	}
	return &g, ws
}

func checkSearchAgainstReference(t *testing.T, seed uint64, nTxn, nRes int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	g, ws := randomGraph(rng, nTxn, nRes)
	ref := refGraph{}
	for _, w := range ws {
		ref.waits = append(ref.waits, g.find(w))
	}
	var stack []frame
	// On-block searches from every wait.
	for _, w := range ws {
		e := g.find(w)
		res := g.walk(&stack, g.txns[e.txn], []*edge{e}, e.txn, noLimits, true)
		want := ref.reaches(e, e)
		// A search from e finds a cycle through e's transaction, maybe by
		// another of its waits: the reference then reaches another wait of
		// the same transaction.
		if !want {
			for _, f := range g.txns[e.txn].waits {
				if f != e && ref.reaches(e, f) {
					want = true
				}
			}
		}
		require.Equal(t, want, res.cycle != nil, "seed %d: search from %v\n%s", seed, e.txn, g.describe())
		if res.cycle != nil {
			require.NoError(t, validCycle(res.cycle), "seed %d\n%s", seed, g.describe())
			require.Equal(t, e, res.cycle[0])
		}
		for _, n := range g.txns {
			require.False(t, n.onStack)
		}
	}
	// The full search finds a cycle iff there is one.
	cycle, _ := g.findCycle(&stack)
	require.Equal(t, ref.hasCycle(), cycle != nil, "seed %d: full search\n%s", seed, g.describe())
	if cycle != nil {
		require.NoError(t, validCycle(cycle), "seed %d\n%s", seed, g.describe())
	}
	for _, r := range g.res {
		require.False(t, r.onStack)
	}
}

// TestSearchAgainstReference compares on-block and full searches with the
// brute-force reference on random graphs.
func TestSearchAgainstReference(t *testing.T) {
	for seed := range uint64(3000) {
		checkSearchAgainstReference(t, seed, 2+int(seed%9), 1+int(seed%7))
	}
}

func FuzzSearch(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2))
	f.Add(uint64(42), uint8(8), uint8(3))
	f.Add(uint64(7), uint8(20), uint8(10))
	f.Fuzz(func(t *testing.T, seed uint64, nTxn, nRes uint8) {
		checkSearchAgainstReference(t, seed, 1+int(nTxn%32), 1+int(nRes%16))
	})
}

// describe renders the graph for scenario tests: each wait in txn order.
func (g *graph) describe() string {
	var sb strings.Builder
	for _, n := range g.roots() {
		for _, e := range n.waits {
			fmt.Fprintf(&sb, "%v waits for %v (resource %d, blockers %v)\n", n.id, e.lock, e.res.id, e.res.blockers)
		}
	}
	if g.dorm != nil {
		parked := g.dorm.parked()
		slices.SortFunc(parked, func(a, b txnlock.WaitEdge) int { return cmp.Compare(a.Waiter.Txn(), b.Waiter.Txn()) })
		for _, e := range parked {
			fmt.Fprintf(&sb, "%v waits for %v (resource %d, parked)\n", e.Waiter.Txn(), e.Lock, e.Resource)
		}
	}
	return sb.String()
}
