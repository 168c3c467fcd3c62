package deadlock

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
)

// testWaiter is a detect.Waiter whose answers a test sets, and may change
// at any moment: Blockers answers blockers, read when asked; WaitsFor
// answers waitsFor once a test set it (setWaitsFor), else the blockers
// without the waiter's own transaction. Once its wait ended (end, or Fail)
// both answer false. It is safe for concurrent use.
type testWaiter struct {
	txn txnlock.TxnID

	mu       sync.Mutex
	blockers []txnlock.TxnID
	waitsFor []txnlock.TxnID
	exact    bool // waitsFor was set
	err      error
	// onAsk, if set, runs at each question, before the answer is read,
	// with the detector's locks held: it must not call the detector.
	onAsk func()

	ended  atomic.Bool
	asked  atomic.Int64 // Blockers and WaitsFor calls
	failed chan error   // the error Fail delivered (capacity 1)
	// queued, if set, is whom the waiter was queued behind, and its lock
	// has not been granted since: edge carries it and Regranted is false.
	queued []txnlock.TxnID
}

// Regranted is true unless queued is set: a test waiter notes no
// blockers when it is queued, so Block asks it (detect.Waiter).
func (w *testWaiter) Regranted() bool { return w.queued == nil }

// heldLocks is a detect.LockCounter: how many locks each transaction
// holds in a test's manager.
type heldLocks map[txnlock.TxnID]int

func (h heldLocks) LocksHeld(txn txnlock.TxnID) int { return h[txn] }

// Requested is the zero LockRef and time: a test waiter's reports name
// transactions only (detect.Waiter).
func (w *testWaiter) Requested() (txnlock.LockRef, time.Time) { return txnlock.LockRef{}, time.Time{} }

func newTestWaiter(txn txnlock.TxnID, blockers ...txnlock.TxnID) *testWaiter {
	return &testWaiter{txn: txn, blockers: blockers, failed: make(chan error, 1)}
}

func (w *testWaiter) Txn() txnlock.TxnID { return w.txn }

func (w *testWaiter) Active() bool { return !w.ended.Load() }

func (w *testWaiter) Fail(err error) bool {
	if !w.ended.CompareAndSwap(false, true) {
		return false
	}
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.failed <- err
	return true
}

// end ends the wait as a grant does: the waiter answers no more questions.
func (w *testWaiter) end() { w.ended.Store(true) }

// Err is the error the waiter was failed with, or nil.
func (w *testWaiter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *testWaiter) setBlockers(b ...txnlock.TxnID) {
	w.mu.Lock()
	w.blockers = b
	w.mu.Unlock()
}

func (w *testWaiter) setWaitsFor(b ...txnlock.TxnID) {
	w.mu.Lock()
	w.waitsFor, w.exact = b, true
	w.mu.Unlock()
}

// edge returns the waiter's WaitEdge.
func (w *testWaiter) edge() detect.Edge {
	return detect.Edge{Waiter: w, Blockers: w.queued}
}

func (w *testWaiter) Blockers(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	return w.answer(dst, false)
}

func (w *testWaiter) WaitsFor(dst []txnlock.TxnID) ([]txnlock.TxnID, bool) {
	return w.answer(dst, true)
}

// answer is Blockers, or WaitsFor if direct: the list set for it, else
// the blockers without the waiter's own transaction.
func (w *testWaiter) answer(dst []txnlock.TxnID, direct bool) ([]txnlock.TxnID, bool) {
	w.asked.Add(1)
	if w.onAsk != nil {
		w.onAsk()
	}
	if !w.Active() {
		return dst, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !direct {
		return append(dst, w.blockers...), true
	}
	if w.exact {
		return append(dst, w.waitsFor...), true
	}
	for _, b := range w.blockers {
		if b != w.txn {
			dst = append(dst, b)
		}
	}
	return dst, true
}

func (w *testWaiter) String() string { return w.txn.String() }

// The search is checked against a brute-force reference over the waits
// with no marks: nodes are the active waits, and wait e leads to wait f
// when f's transaction is among e's blockers and is not e's own. Waits
// that ended are in the registry too, and no search may follow them.

type refGraph struct {
	waits []*testWaiter
}

func (r refGraph) next(e *testWaiter) []*testWaiter {
	var out []*testWaiter
	for _, f := range r.waits {
		if f.txn != e.txn && slices.Contains(e.blockers, f.txn) {
			out = append(out, f)
		}
	}
	return out
}

// reaches reports whether to is reachable from any successor of from.
func (r refGraph) reaches(from, to *testWaiter) bool {
	seen := map[*testWaiter]bool{}
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

// reachesCycle reports whether a wait on a cycle is reachable from from.
func (r refGraph) reachesCycle(from *testWaiter) bool {
	for _, e := range r.waits {
		if r.reaches(e, e) && (e == from || r.reaches(from, e)) {
			return true
		}
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

// validCycle checks a cycle against the waits: each wait is active and
// its blockers name the next wait's transaction, no transaction twice.
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
		if !e.active() {
			return fmt.Errorf("%v's wait ended", e.txn)
		}
		if n.txn == e.txn || !slices.Contains(e.blockers, n.txn) {
			return fmt.Errorf("%v waits for %v, not for %v", e.txn, e.blockers, n.txn)
		}
	}
	return nil
}

// randomWaits registers the waits of nTxn transactions (some waiting in
// two places) on nLock locks, each blocked by a few random transactions
// (sometimes by its own waiters, as upgrades are). About one wait in
// eight has ended, not yet Unblocked. It returns the active waits and the
// ended ones.
func randomWaits(rng *rand.Rand, r *registry, nTxn, nLock int) (active, ended []*testWaiter) {
	locks := make([][]txnlock.TxnID, nLock)
	for l := range locks {
		for range rng.IntN(4) {
			locks[l] = append(locks[l], txnlock.TxnID(1+rng.IntN(nTxn)))
		}
	}
	seq := uint64(0)
	for t := 1; t <= nTxn; t++ {
		n := rng.IntN(3) // 0, 1 or 2 waits
		if n == 2 && rng.IntN(3) != 0 {
			n = 1
		}
		for range n {
			w := newTestWaiter(txnlock.TxnID(t), locks[rng.IntN(nLock)]...)
			seq++
			r.add(w, w.txn, seq)
			if rng.IntN(8) == 0 {
				w.end()
				ended = append(ended, w)
			} else {
				active = append(active, w)
			}
		}
	}
	return active, ended
}

// lazyDescribe renders a registry (describe) only when a failure message
// is printed: describe asks every waiter, ended ones too.
type lazyDescribe struct{ r *registry }

func (l lazyDescribe) String() string { return l.r.describe() }

func checkSearchAgainstReference(t *testing.T, seed uint64, nTxn, nLock int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	reg := new(registry)
	ws, ended := randomWaits(rng, reg, nTxn, nLock)
	ref := refGraph{waits: ws}
	g := newGraph(&liveSource{r: reg})
	var stack []frame
	// On-block searches from every active wait, on one live view reset
	// between searches, as core.check does.
	for _, w := range ws {
		g.reset()
		root := g.node(w.txn)
		i := slices.IndexFunc(root.waits, func(e *edge) bool { return e.waiter == w })
		require.GreaterOrEqual(t, i, 0, "random seed %d: the view lacks an active wait", seed)
		e := root.waits[i]
		res := g.walk(&stack, root, []*edge{e}, w.txn, noLimits, true)
		// A search from w finds a cycle through w's transaction, maybe by
		// another of its waits: the reference then reaches another wait of
		// the same transaction.
		want := false
		for _, f := range ws {
			if f.txn == w.txn && ref.reaches(w, f) {
				want = true
			}
		}
		require.Equal(t, want, res.cycle != nil, "random seed %d: search from %v\n%s", seed, w.txn, lazyDescribe{reg})
		if res.cycle != nil {
			require.NoError(t, validCycle(res.cycle), "random seed %d\n%s", seed, lazyDescribe{reg})
			require.Same(t, e, res.cycle[0])
			require.Nil(t, res.met)
		} else {
			// Without a cycle back to w's transaction, the search keeps
			// the first other cycle it meets: there is one iff some
			// cycle is reachable from w.
			require.Equal(t, ref.reachesCycle(w), res.met != nil, "random seed %d: search from %v\n%s", seed, w.txn, lazyDescribe{reg})
			if res.met != nil {
				require.NoError(t, validCycle(res.met), "random seed %d\n%s", seed, lazyDescribe{reg})
			}
		}
		for _, n := range g.txns {
			require.False(t, n.onStack)
			for _, e := range n.waits {
				require.True(t, e.active(), "random seed %d: the view read an ended wait of %v", seed, n.id)
			}
		}
	}
	// The full search of a snapshot finds a cycle iff there is one.
	flat, arena := reg.flatten(nil, nil)
	require.Len(t, flat, len(ws), "the snapshot holds the active waits")
	snap := snapshotOf(flat, arena)
	cycle, _ := snap.findCycle(&stack)
	require.Equal(t, ref.hasCycle(), cycle != nil, "random seed %d: full search\n%s", seed, lazyDescribe{reg})
	if cycle != nil {
		require.NoError(t, validCycle(cycle), "random seed %d\n%s", seed, lazyDescribe{reg})
	}
	for _, n := range snap.txns {
		require.False(t, n.onStack)
	}
	for _, w := range ended {
		require.Zero(t, w.asked.Load(), "random seed %d: a view or the snapshot asked an ended wait", seed)
	}
}

// TestSearchAgainstReference compares on-block searches of live views and
// full searches of snapshots with the brute-force reference on random
// waits.
func TestSearchAgainstReference(t *testing.T) {
	for seed := range uint64(3000) {
		checkSearchAgainstReference(t, seed, 2+int(seed%9), 1+int(seed%7))
	}
}

func FuzzSearch(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2))
	f.Add(uint64(42), uint8(8), uint8(3))
	f.Add(uint64(7), uint8(20), uint8(10))
	f.Fuzz(func(t *testing.T, seed uint64, nTxn, nLock uint8) {
		checkSearchAgainstReference(t, seed, 1+int(nTxn%32), 1+int(nLock%16))
	})
}

// TestSearchAsksOnlyWhatItVisits: a live view asks the waits of the
// transactions the search reaches, each once, and nothing else. Txn 1
// waits for 2, which waits for 3; txn 3 runs. Txns 4 and 5 wait behind 3
// as well, and nobody waits for them.
func TestSearchAsksOnlyWhatItVisits(t *testing.T) {
	d, err := newDetector(Options{}, false)
	require.NoError(t, err)
	defer d.Close()
	w1, w2 := newTestWaiter(1, 2), newTestWaiter(2, 3)
	w4, w5 := newTestWaiter(4, 3), newTestWaiter(5, 3)
	for _, w := range []*testWaiter{w4, w5, w2, w1} {
		d.block(w.edge())
		w.asked.Store(0) // its own Block asked it once
	}
	require.NoError(t, d.check(w1, w1.Txn()))
	require.Equal(t, int64(1), w1.asked.Load())
	require.Equal(t, int64(1), w2.asked.Load())
	require.Zero(t, w4.asked.Load()+w5.asked.Load(), "a search asks no wait it does not reach")
	require.Equal(t, uint64(2), d.Stats().Steps)
}

// TestSearchSkipsEndedWaits: a search follows no wait that has ended,
// whether it ended before the view read it (the view leaves it out and
// does not ask it) or after (the search sees Active false when it comes
// to follow it). Either way there is no cycle to confirm: no false
// positive is even found.
func TestSearchSkipsEndedWaits(t *testing.T) {
	t.Run("before the view reads it", func(t *testing.T) {
		d, err := newDetector(Options{}, false)
		require.NoError(t, err)
		defer d.Close()
		w1, w2 := newTestWaiter(1, 2), newTestWaiter(2, 1)
		d.block(w1.edge())
		require.True(t, d.block(w2.edge()))
		w1.end()          // granted: its goroutine's Unblock is on the way
		w1.asked.Store(0) // its own Block asked it
		require.NoError(t, d.check(w2, w2.Txn()))
		require.Zero(t, w1.asked.Load(), "an ended wait is not asked")
		st := d.Stats()
		require.Zero(t, st.Deadlocks)
		require.Zero(t, st.FalsePositivesAvoided)
	})
	t.Run("after the view read it", func(t *testing.T) {
		// Txn 2 waits in two places: for 3 (w2a) and for 1 (w2b). The
		// view reads both when the search reaches txn 2; w2b ends while
		// the search is at txn 3, before it comes back to follow w2b.
		d, err := newDetector(Options{}, false)
		require.NoError(t, err)
		defer d.Close()
		w1 := newTestWaiter(1, 2)
		w2a, w2b := newTestWaiter(2, 3), newTestWaiter(2, 1)
		w3 := newTestWaiter(3, 9)
		for _, w := range []*testWaiter{w2a, w2b, w3, w1} {
			d.block(w.edge())
			w.asked.Store(0) // its own Block asked it once
		}
		w3.onAsk = func() { w2b.end() }
		require.NoError(t, d.check(w1, w1.Txn()))
		require.Equal(t, int64(1), w2b.asked.Load(), "the view read w2b while it was active")
		st := d.Stats()
		require.Zero(t, st.Deadlocks)
		require.Zero(t, st.FalsePositivesAvoided, "the search did not follow w2b")
	})
}

// describe renders the registered waits for traces and failure messages,
// by transaction and stamp: each active wait with its blockers as its
// waiter answers now, and whom it waits for directly when that differs
// from them; a wait that ended as such. It asks each waiter with its slot
// held, as a search does.
func (r *registry) describe() string {
	type line struct {
		txn  txnlock.TxnID
		seq  uint64
		text string
	}
	var lines []line
	for i := range r.slots {
		s := &r.slots[i]
		s.mu.Lock()
		for j := range s.lenLocked() {
			w := s.atLocked(j)
			lock, _ := w.waiter.Requested()
			text := fmt.Sprintf("%v waits for %v (stamp %d)", w.txn, lock, w.seq)
			b, ok := w.waiter.Blockers(nil)
			var wf []txnlock.TxnID
			if ok {
				wf, ok = w.waiter.WaitsFor(nil)
			}
			own := slices.DeleteFunc(slices.Clone(b), func(x txnlock.TxnID) bool { return x == w.txn })
			switch {
			case !ok:
				text += ": ended"
			case slices.Equal(wf, own):
				text += fmt.Sprintf(": blockers %v", b)
			default:
				text += fmt.Sprintf(": blockers %v, waits for %v", b, wf)
			}
			lines = append(lines, line{w.txn, w.seq, text})
		}
		s.mu.Unlock()
	}
	slices.SortFunc(lines, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.txn, b.txn), cmp.Compare(a.seq, b.seq))
	})
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}
