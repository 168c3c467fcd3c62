package deadlock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/pointlock"
	"go.uber.org/goleak"
)

// These tests run the detector under the real point manager.

var long = flag.Bool("long", false, "run the randomized tests with many more seeds")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newPointManager(t testing.TB, opts Options) (*pointlock.Manager, *Detector) {
	t.Helper()
	det, err := New(opts)
	require.NoError(t, err)
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{
		Detector: det, LockTimeout: txnlock.WaitForever,
	}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, m.Close())
		require.NoError(t, det.Close())
	})
	return m, det
}

func lockReq(txn txnlock.TxnID, cf txnlock.ColumnFamily, key string, mode txnlock.Mode) txnlock.Request {
	return txnlock.Request{Txn: txn, CF: cf, Range: txnlock.Point([]byte(key)), Mode: mode}
}

// parkings returns a channel that receives each waiter whose goroutine is
// about to sleep in Wait, its wait reported to the detector and checked
// (lockwait.SetTestingParked), until the test ends: how a test sees that
// a request is asleep, without polling.
func parkings(t testing.TB) <-chan *lockwait.Waiter {
	ch := make(chan *lockwait.Waiter, 64)
	t.Cleanup(lockwait.SetTestingParked(func(w *lockwait.Waiter, sleeps bool) {
		if sleeps {
			ch <- w
		}
	}))
	return ch
}

// lockAsync runs Lock in a goroutine and returns its result channel.
func lockAsync(m *pointlock.Manager, req txnlock.Request) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- m.Lock(context.Background(), req) }()
	return ch
}

func TestPointCycleAcrossColumnFamilies(t *testing.T) {
	m, det := newPointManager(t, Options{})
	asleep := parkings(t)
	ctx := context.Background()
	require.NoError(t, m.AddColumnFamily(1))
	require.NoError(t, m.Lock(ctx, lockReq(1, 0, "k", txnlock.Exclusive)))
	require.NoError(t, m.Lock(ctx, lockReq(2, 1, "k", txnlock.Exclusive)))

	first := lockAsync(m, lockReq(1, 1, "k", txnlock.Exclusive))
	<-asleep
	err := m.Lock(ctx, lockReq(2, 0, "k", txnlock.Exclusive))
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	var de *txnlock.DeadlockError
	require.ErrorAs(t, err, &de)
	require.Equal(t, txnlock.TxnID(2), de.Victim)
	require.Len(t, de.Cycle, 2)
	require.Equal(t, txnlock.ColumnFamily(0), de.Cycle[0].Lock.CF)
	require.Equal(t, []txnlock.TxnID{1}, de.Cycle[0].Blockers)
	require.Equal(t, txnlock.ColumnFamily(1), de.Cycle[1].Lock.CF)
	require.Equal(t, []txnlock.TxnID{2}, de.Cycle[1].Blockers)
	t.Log("\n" + de.Report())

	// The victim rolls back; the other proceeds.
	require.NoError(t, m.UnlockAll(2))
	require.NoError(t, <-first)
	require.Len(t, det.History(), 1)
}

// TestPointCycleClosedByThirdWait: txn 1 waits for c, held by txn 3,
// which runs: its Block asks for no Check. Txn 2 waits for a, held by
// txn 1, which waits: its Block asks, and the search (2 -> 1 -> 3) finds
// no cycle. Txn 3's wait for b, held by txn 2, closes 3 -> 2 -> 1 -> 3,
// and its search reads the two earlier waits from the manager and finds
// it.
func TestPointCycleClosedByThirdWait(t *testing.T) {
	m, det := newPointManager(t, Options{})
	asleep := parkings(t)
	ctx := context.Background()
	for txn, key := range map[txnlock.TxnID]string{1: "a", 2: "b", 3: "c"} {
		require.NoError(t, m.Lock(ctx, lockReq(txn, 0, key, txnlock.Exclusive)))
	}
	one := lockAsync(m, lockReq(1, 0, "c", txnlock.Exclusive))
	<-asleep
	require.Zero(t, det.Stats().Searches, "txn 3 does not wait: no Check")
	two := lockAsync(m, lockReq(2, 0, "a", txnlock.Exclusive))
	<-asleep
	require.Equal(t, uint64(1), det.Stats().Searches, "txn 1 waits: txn 2's Block asks for a Check")

	err := m.Lock(ctx, lockReq(3, 0, "b", txnlock.Exclusive))
	var de *txnlock.DeadlockError
	require.ErrorAs(t, err, &de)
	require.Equal(t, txnlock.TxnID(3), de.Victim)
	require.Len(t, de.Cycle, 3)
	st := det.Stats()
	require.Equal(t, uint64(2), st.Searches)
	require.Zero(t, st.FalsePositivesAvoided)

	// The victim rolls back: txn 1 gets c, then ends; txn 2 gets a.
	require.NoError(t, m.UnlockAll(3))
	require.NoError(t, <-one)
	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-two)
	require.NoError(t, m.UnlockAll(2))
	require.Zero(t, det.Stats().Waits)
}

// TestPointLoneWaitUnsearched: a transaction that holds nothing and
// queues behind a waiting holder, with no request behind its own, is on
// no cycle: its Block asks for no Check (design.go, "A wait nobody
// waits for"). The holder's wait that closes a cycle still searches.
func TestPointLoneWaitUnsearched(t *testing.T) {
	m, det := newPointManager(t, Options{})
	asleep := parkings(t)
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx, lockReq(1, 0, "a", txnlock.Exclusive)))
	require.NoError(t, m.Lock(ctx, lockReq(2, 0, "b", txnlock.Exclusive)))
	two := lockAsync(m, lockReq(2, 0, "a", txnlock.Exclusive))
	<-asleep
	three := lockAsync(m, lockReq(3, 0, "b", txnlock.Exclusive)) // behind 2, which waits
	<-asleep
	require.Zero(t, det.Stats().Searches, "txn 3 holds nothing and nobody queued behind it")

	err := m.Lock(ctx, lockReq(1, 0, "b", txnlock.Exclusive)) // 1 -> 2 -> 1
	var de *txnlock.DeadlockError
	require.ErrorAs(t, err, &de)
	require.Equal(t, txnlock.TxnID(1), de.Victim)
	require.Equal(t, uint64(1), det.Stats().Searches)

	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-two)
	require.NoError(t, m.UnlockAll(2))
	require.NoError(t, <-three)
	require.NoError(t, m.UnlockAll(3))
	require.Zero(t, det.Stats().Waits)
}

func TestPointSharedHoldersBothUpgrade(t *testing.T) {
	m, det := newPointManager(t, Options{})
	asleep := parkings(t)
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx, lockReq(1, 0, "k", txnlock.Shared)))
	require.NoError(t, m.Lock(ctx, lockReq(2, 0, "k", txnlock.Shared)))

	first := lockAsync(m, lockReq(1, 0, "k", txnlock.Exclusive))
	<-asleep
	err := m.Lock(ctx, lockReq(2, 0, "k", txnlock.Exclusive))
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	var de *txnlock.DeadlockError
	require.ErrorAs(t, err, &de)
	require.Equal(t, txnlock.TxnID(2), de.Victim)

	require.NoError(t, m.UnlockAll(2))
	require.NoError(t, <-first)
	require.Equal(t, uint64(1), det.Stats().Deadlocks)
}

// TestTwoManagersShareDetector: a cycle through two point managers that
// share one detector is found.
func TestTwoManagersShareDetector(t *testing.T) {
	m1, det := newPointManager(t, Options{})
	asleep := parkings(t)
	m2, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}})
	require.NoError(t, err)
	defer m2.Close()
	ctx := context.Background()
	require.NoError(t, m1.Lock(ctx, lockReq(1, 0, "k", txnlock.Exclusive)))
	require.NoError(t, m2.Lock(ctx, lockReq(2, 0, "k", txnlock.Exclusive)))
	first := lockAsync(m2, lockReq(1, 0, "k", txnlock.Exclusive))
	<-asleep
	err = m1.Lock(ctx, lockReq(2, 0, "k", txnlock.Exclusive))
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	require.NoError(t, m1.UnlockAll(2))
	require.NoError(t, m2.UnlockAll(2))
	require.NoError(t, <-first)
}

// TestPointVictimOtherThanRequester: with VictimYoungest the waiting txn
// 2 is failed through its Waiter and the requester, txn 1, proceeds once
// txn 2 rolls back.
func TestPointVictimOtherThanRequester(t *testing.T) {
	m, _ := newPointManager(t, Options{Victim: VictimYoungest})
	asleep := parkings(t)
	ctx := context.Background()
	require.NoError(t, m.Lock(ctx, lockReq(1, 0, "a", txnlock.Exclusive)))
	require.NoError(t, m.Lock(ctx, lockReq(2, 0, "b", txnlock.Exclusive)))
	m2 := lockAsync(m, lockReq(2, 0, "a", txnlock.Exclusive))
	// Wait until txn 2 is asleep, then close the cycle with txn 1.
	<-asleep
	m1 := lockAsync(m, lockReq(1, 0, "b", txnlock.Exclusive))
	err := <-m2
	require.ErrorIs(t, err, txnlock.ErrDeadlock)
	require.NoError(t, m.UnlockAll(2))
	require.NoError(t, <-m1)
}

// refState is the randomized test's own record of who holds and who waits
// for what, kept by the transactions' goroutines: a hold is added after
// Lock returns and removed before Unlock, a wait is set before Lock and
// cleared after. A transaction that is blocked in Lock is between those,
// so the record of every transaction in a real cycle is exact.
type refState struct {
	mu      sync.Mutex
	holds   map[txnlock.TxnID]map[string]txnlock.Mode
	waiting map[txnlock.TxnID]txnlock.Request
}

func (r *refState) key(cf txnlock.ColumnFamily, rg txnlock.Range) string {
	k, _ := rg.PointKey()
	return fmt.Sprintf("%d/%s", cf, k)
}

// validate checks that a reported cycle is real: every member is blocked
// in a Lock for the lock the report names, and the report says it waits
// directly for the next member, which holds that lock or is queued for it
// in a conflicting mode (a request ahead: the detector confirms a cycle
// through such requests and reports them). The error shows the holds.
func (r *refState) validate(de *txnlock.DeadlockError) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(de.Cycle) < 2 {
		return fmt.Errorf("cycle of %d", len(de.Cycle))
	}
	for i, c := range de.Cycle {
		req, ok := r.waiting[c.Txn]
		if !ok {
			return fmt.Errorf("%v is not waiting\nholds: %v", c.Txn, r.holds)
		}
		key := r.key(c.Lock.CF, c.Lock.Range)
		if r.key(req.CF, req.Range) != key || req.Mode != c.Lock.Mode {
			return fmt.Errorf("%v waits for %v, not %v\nholds: %v", c.Txn, req, c.Lock, r.holds)
		}
		next := de.Cycle[(i+1)%len(de.Cycle)].Txn
		if !slices.Contains(c.Blockers, next) {
			return fmt.Errorf("%v's entry does not name %v: %v", c.Txn, next, c.Blockers)
		}
		if _, ok := r.holds[next][key]; ok {
			continue
		}
		ahead, ok := r.waiting[next]
		if !ok || r.key(ahead.CF, ahead.Range) != key || (ahead.Mode == txnlock.Shared && c.Lock.Mode == txnlock.Shared) {
			return fmt.Errorf("%v neither holds %v nor is queued for it in a conflicting mode\nholds: %v", next, c.Lock, r.holds)
		}
	}
	return nil
}

// TestPointRandomized runs random lock/release schedules over a few keys
// with one goroutine per transaction, every request waiting without a
// timeout. Every deadlock reported must be a real cycle at the moment it
// was decided (checked against refState, under the detector's mutex), and
// every run must end: a cycle the detector missed would leave goroutines
// blocked forever, and the watchdog reports them with the lock table.
func TestPointRandomized(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"on-block", Options{}},
		{"on-block-youngest", Options{Victim: VictimYoungest}},
		{"on-block-fewest-locks", Options{Victim: VictimFewestLocks}},
		{"on-block-depth-1", Options{MaxDepth: 1}},
		{"assume-depth-2", Options{MaxDepth: 2, Breaker: AssumeDeadlock}},
		{"background", Options{Detection: Background}},
		{"delay", Options{DetectDelay: 50 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds := uint64(3)
			if *long {
				seeds = 100
			}
			for seed := range seeds {
				runRandomized(t, tc.opts, seed)
			}
		})
	}
}

func runRandomized(t *testing.T, opts Options, seed uint64) {
	const (
		txns   = 6
		keys   = 4
		rounds = 30
		ops    = 4
	)
	ref := &refState{holds: map[txnlock.TxnID]map[string]txnlock.Mode{}, waiting: map[txnlock.TxnID]txnlock.Request{}}
	if opts.Detection == OnBlock && opts.MaxDepth == 0 {
		// No safety net: a cycle the on-block checks miss must show as a
		// stuck run, not end a second later in the periodic pass.
		opts.BackgroundInterval = time.Hour
	}
	det, err := New(opts)
	require.NoError(t, err)
	var bad []error // guarded by det.mu
	det.mu.Lock()
	det.testingOnBreak = func(de *txnlock.DeadlockError) {
		if err := ref.validate(de); err != nil {
			bad = append(bad, fmt.Errorf("%w\n%s\nwaits:\n%s", err, de.Report(), det.reg.describe()))
		}
	}
	det.mu.Unlock()
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}})
	require.NoError(t, err)
	require.NoError(t, m.AddColumnFamily(1))

	var running sync.WaitGroup
	var nDeadlocks, nOK int64
	var countMu sync.Mutex
	start := make(chan struct{})
	for i := range txns {
		running.Add(1)
		go func() {
			defer running.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			<-start
			for round := range rounds {
				// Each round is a new transaction id.
				txn := txnlock.TxnID(1 + round*txns + i)
				ok := true
				for range ops {
					cf := txnlock.ColumnFamily(rng.IntN(2))
					key := fmt.Sprintf("k%d", rng.IntN(keys))
					mode := txnlock.Shared
					if rng.IntN(2) == 0 {
						mode = txnlock.Exclusive
					}
					req := lockReq(txn, cf, key, mode)
					ref.mu.Lock()
					ref.waiting[txn] = req
					ref.mu.Unlock()
					err := m.Lock(context.Background(), req)
					// A victim is failed under the detector's mutex,
					// before testingOnBreak checks the cycle against
					// ref; its Lock, as it leaves the queue, may grant
					// another member's. Let the check finish before
					// either changes ref.
					det.mu.Lock()
					det.mu.Unlock() //nolint:staticcheck // an empty critical section, on purpose
					ref.mu.Lock()
					delete(ref.waiting, txn)
					if err == nil {
						if ref.holds[txn] == nil {
							ref.holds[txn] = map[string]txnlock.Mode{}
						}
						k := ref.key(cf, req.Range)
						ref.holds[txn][k] = ref.holds[txn][k].Max(mode)
					}
					ref.mu.Unlock()
					if err != nil {
						if !errors.Is(err, txnlock.ErrDeadlock) {
							panic(err)
						}
						ok = false
						break
					}
					// Let the others run while we hold what we have.
					for range rng.IntN(4) {
						runtime.Gosched()
					}
				}
				ref.mu.Lock()
				delete(ref.holds, txn)
				ref.mu.Unlock()
				if err := m.UnlockAll(txn); err != nil {
					panic(err)
				}
				countMu.Lock()
				if ok {
					nOK++
				} else {
					nDeadlocks++
				}
				countMu.Unlock()
			}
		}()
	}
	close(start)
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("seed %d: goroutines stuck (a missed cycle?)\n%v\ndetector: %v", seed, m.Status(), det.Stats())
	}
	require.NoError(t, m.Close())
	require.NoError(t, det.Close())
	require.Empty(t, bad, "seed %d: reported deadlocks that were not real cycles", seed)
	st := det.Stats()
	require.Zero(t, st.Waits)
	// A deadlock decided may fail to reach its victim: two overlapping
	// cycles broken at once by two searches, the second victim granted by
	// the first victim's rollback before its own Fail. Never the reverse.
	require.LessOrEqual(t, uint64(nDeadlocks), st.Deadlocks+st.Assumed, "seed %d: every deadlock error was decided", seed)
	t.Logf("seed %d: committed=%d deadlocks=%d %v", seed, nOK, nDeadlocks, st)
}

// TestFewestLocksCountsAfterBlock: pointlock counts a waiter's locks after
// Block, outside its critical section, and the waiter reports them. The
// fewest-locks policy must see those counts: txn 1 (one lock) waits for
// txn 2 (three locks), which closes the cycle; the victim is txn 1. Were
// the counts missing (0 each), the tie would go to the youngest, txn 2.
func TestFewestLocksCountsAfterBlock(t *testing.T) {
	det, err := New(Options{Victim: VictimFewestLocks})
	require.NoError(t, err)
	defer det.Close()
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}})
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	lock := func(txn txnlock.TxnID, key string) error {
		return m.Lock(ctx, txnlock.Request{Txn: txn, Range: txnlock.Point([]byte(key)), Mode: txnlock.Exclusive})
	}
	require.NoError(t, lock(1, "a"))
	for _, k := range []string{"d", "e", "f"} {
		require.NoError(t, lock(2, k))
	}
	asleep := parkings(t)
	first := make(chan error, 1)
	go func() { first <- lock(1, "d") }()
	<-asleep
	second := make(chan error, 1)
	go func() { second <- lock(2, "a") }()

	var de *txnlock.DeadlockError
	select {
	case err = <-first:
		require.ErrorAs(t, err, &de)
	case err = <-second:
		require.ErrorAs(t, err, &de)
		require.NoError(t, m.UnlockAll(2))
		require.NoError(t, <-first)
		require.NoError(t, m.UnlockAll(1))
		t.Fatalf("the victim is txn %d, not txn 1:\n%s", de.Victim, de.Report())
	}
	require.Equal(t, txnlock.TxnID(1), de.Victim)
	require.Contains(t, de.Report(), "TRANSACTION 1, holding 1 lock(s)")
	require.Contains(t, de.Report(), "TRANSACTION 2, holding 3 lock(s)")
	require.NoError(t, m.UnlockAll(1))
	require.NoError(t, <-second)
	require.NoError(t, m.UnlockAll(2))
}
