package contention

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// cycleWatch looks at a manager's Status every period and remembers which
// transactions were on a cycle of waits at the last look: in a strongly
// connected set of two or more transactions of the graph that
// WaitStatus.Blockers draws (every wait is reachable through it, so every
// cycle of waits is there). A wait that times out while its transaction
// is on a cycle ends a deadlock that detection left alone; any other
// timeout ends a wait behind a chain that was still moving.
type cycleWatch struct {
	mu sync.Mutex
	// on maps the transactions on a cycle at the last look to how long
	// every cycle of their strongly connected set had stood then (since
	// the newest of its waits began); guarded by mu.
	on map[txnlock.TxnID]time.Duration
	// looks is the shape of the graph at each look; guarded by mu.
	looks []graphShape
}

// graphShape is what one look at Status saw: how many holders ran (held
// locks and waited for nothing), the median length of the chains of
// waits (from a waiting transaction, the longest path of waits to one
// that does not wait), and the median age of the waits.
type graphShape struct {
	running int
	depth   int
	age     time.Duration
}

// watchCycles starts a cycleWatch on m until ctx ends; wait waits for its
// goroutine.
func watchCycles(ctx context.Context, m txnlock.Manager, period time.Duration) (w *cycleWatch, wait func()) {
	w = &cycleWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			on := map[txnlock.TxnID]time.Duration{}
			now := time.Now()
			st := m.Status()
			for txn, since := range onCycles(st.Waits) {
				on[txn] = now.Sub(since)
			}
			shape := shapeOf(st, now)
			w.mu.Lock()
			w.on = on
			w.looks = append(w.looks, shape)
			w.mu.Unlock()
		}
	}()
	return w, func() { <-done }
}

// onCycle reports whether txn was on a cycle at the last look, and how
// long every cycle through it had stood then.
func (w *cycleWatch) onCycle(txn txnlock.TxnID) (stood time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	stood, ok = w.on[txn]
	return stood, ok
}

// shapes returns the shape of each look so far.
func (w *cycleWatch) shapes() []graphShape {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.looks)
}

// shapeOf measures the graph of waits that st's Blockers draw, at now.
func shapeOf(st txnlock.Status, now time.Time) graphShape {
	next := map[txnlock.TxnID][]txnlock.TxnID{}
	var ages []time.Duration
	for _, w := range st.Waits {
		next[w.Txn] = append(next[w.Txn], w.Blockers...)
		ages = append(ages, now.Sub(w.Since))
	}
	var s graphShape
	holders := map[txnlock.TxnID]bool{}
	for _, l := range st.Locks {
		for _, h := range l.Holders {
			if _, waits := next[h]; !waits && !holders[h] {
				s.running++
			}
			holders[h] = true
		}
	}
	// depth[t] is the longest path of waits from t to a transaction that
	// does not wait; a transaction on a cycle counts its path until the
	// walk comes back to itself.
	depth := map[txnlock.TxnID]int{}
	var walk func(t txnlock.TxnID) int
	walk = func(t txnlock.TxnID) int {
		if d, ok := depth[t]; ok {
			return d
		}
		depth[t] = 0 // on the walk's path: a cycle ends here
		d := 0
		for _, b := range next[t] {
			if _, waits := next[b]; waits && b != t {
				d = max(d, 1+walk(b))
			}
		}
		depth[t] = d
		return d
	}
	var ds []int
	for t := range next {
		ds = append(ds, walk(t))
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		slices.Sort(ages)
		s.depth, s.age = ds[len(ds)/2], ages[len(ages)/2]
	}
	return s
}

// onCycles returns the transactions that are on a cycle of the graph the
// waits' Blockers draw: the members of its strongly connected components
// of two or more (Tarjan's algorithm), each with the newest Since of its
// component's waits, since when every cycle in it has stood. A
// transaction never waits for itself in it (an upgrade lists its own
// transaction).
func onCycles(waits []txnlock.WaitStatus) map[txnlock.TxnID]time.Time {
	next := map[txnlock.TxnID][]txnlock.TxnID{}
	since := map[txnlock.TxnID]time.Time{}
	for _, w := range waits {
		next[w.Txn] = append(next[w.Txn], w.Blockers...)
		if w.Since.After(since[w.Txn]) {
			since[w.Txn] = w.Since
		}
	}
	type mark struct{ index, low int }
	marks := map[txnlock.TxnID]*mark{}
	var stack []txnlock.TxnID
	onStack := map[txnlock.TxnID]bool{}
	on := map[txnlock.TxnID]time.Time{}
	var visit func(v txnlock.TxnID) *mark
	visit = func(v txnlock.TxnID) *mark {
		mv := &mark{len(marks), len(marks)}
		marks[v] = mv
		stack = append(stack, v)
		onStack[v] = true
		for _, u := range next[v] {
			switch mu := marks[u]; {
			case u == v:
			case mu == nil:
				mv.low = min(mv.low, visit(u).low)
			case onStack[u]:
				mv.low = min(mv.low, mu.index)
			}
		}
		if mv.low == mv.index {
			i := len(stack) - 1
			for stack[i] != v {
				i--
			}
			if len(stack)-i > 1 {
				var newest time.Time
				for _, u := range stack[i:] {
					if since[u].After(newest) {
						newest = since[u]
					}
				}
				for _, u := range stack[i:] {
					on[u] = newest
				}
			}
			for _, u := range stack[i:] {
				onStack[u] = false
			}
			stack = stack[:i]
		}
		return mv
	}
	for _, w := range waits {
		if marks[w.Txn] == nil {
			visit(w.Txn)
		}
	}
	return on
}

func TestOnCycles(t *testing.T) {
	waits := func(edges ...[2]txnlock.TxnID) []txnlock.WaitStatus {
		var out []txnlock.WaitStatus
		for _, e := range edges {
			out = append(out, txnlock.WaitStatus{Txn: e[0], Blockers: []txnlock.TxnID{e[1]}})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		waits []txnlock.WaitStatus
		on    []txnlock.TxnID
	}{
		{"chain", waits([2]txnlock.TxnID{1, 2}, [2]txnlock.TxnID{2, 3}), nil},
		{"upgrade waits for itself", waits([2]txnlock.TxnID{1, 1}, [2]txnlock.TxnID{2, 1}), nil},
		{"two-cycle and a waiter behind it", waits([2]txnlock.TxnID{1, 2}, [2]txnlock.TxnID{2, 1}, [2]txnlock.TxnID{3, 1}), []txnlock.TxnID{1, 2}},
		{"three-cycle through a second wait", waits([2]txnlock.TxnID{1, 2}, [2]txnlock.TxnID{2, 4}, [2]txnlock.TxnID{2, 3}, [2]txnlock.TxnID{3, 1}), []txnlock.TxnID{1, 2, 3}},
		{"two cycles apart", waits([2]txnlock.TxnID{1, 2}, [2]txnlock.TxnID{2, 1}, [2]txnlock.TxnID{5, 6}, [2]txnlock.TxnID{6, 7}, [2]txnlock.TxnID{7, 5}, [2]txnlock.TxnID{7, 1}), []txnlock.TxnID{1, 2, 5, 6, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []txnlock.TxnID
			for txn := range onCycles(tc.waits) {
				got = append(got, txn)
			}
			slices.Sort(got)
			require.Equal(t, tc.on, got)
		})
	}
}

// TestOnCyclesSince: a strongly connected set's cycles have stood since
// the newest of its waits began.
func TestOnCyclesSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	on := onCycles([]txnlock.WaitStatus{
		{Txn: 1, Blockers: []txnlock.TxnID{2}, Since: at(1)},
		{Txn: 2, Blockers: []txnlock.TxnID{3}, Since: at(5)},
		{Txn: 3, Blockers: []txnlock.TxnID{1}, Since: at(3)},
		{Txn: 4, Blockers: []txnlock.TxnID{1}, Since: at(9)},
	})
	require.Equal(t, map[txnlock.TxnID]time.Time{1: at(5), 2: at(5), 3: at(5)}, on)
}

// TestShapeOf: running holders are those that wait for nothing; a chain's
// length counts its waits to the first transaction that does not wait,
// and a cycle does not loop.
func TestShapeOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held := func(txns ...txnlock.TxnID) txnlock.LockStatus { return txnlock.LockStatus{Holders: txns} }
	wait := func(txn txnlock.TxnID, age int, blockers ...txnlock.TxnID) txnlock.WaitStatus {
		return txnlock.WaitStatus{Txn: txn, Blockers: blockers, Since: t0.Add(-time.Duration(age) * time.Second)}
	}
	st := txnlock.Status{
		// 9 and 8 run; 7 holds and waits for 9.
		Locks: []txnlock.LockStatus{held(9), held(8, 9), held(7)},
		Waits: []txnlock.WaitStatus{
			wait(1, 1, 2), wait(2, 2, 3), wait(3, 3, 7), wait(7, 4, 9), // 1 → 2 → 3 → 7 → 9: lengths 3, 2, 1, 0
			wait(4, 5, 5), wait(5, 6, 4), // a cycle: 4 → 5 → 4, lengths 1 and 2 (around once)
		},
	}
	// Lengths 0, 1, 1, 2, 2, 3; ages 1–6 s.
	require.Equal(t, graphShape{running: 2, depth: 2, age: 4 * time.Second}, shapeOf(st, t0))
	require.Equal(t, graphShape{}, shapeOf(txnlock.Status{}, t0))
}
