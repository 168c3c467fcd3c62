package pebbletxn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/testenv"
)

// Power loss: transfers between accounts run on Pebble's crashable
// in-memory filesystem, and at a random moment the test takes the state a
// power loss would leave (synced data, plus a random share of what was
// not synced), reopens it with Open and checks it; the next round runs on
// that state. Every transfer also writes a log key with its sequence
// number.
//
//   - sync: four workers, deadlocks retried. Every transfer whose Commit
//     returned before the crash survives, in every later round.
//   - nosync: one worker. The log keys that survive are 1..m for some m:
//     a prefix of the commits, never a hole.
//
// In both the account total is unchanged (no commit is half applied).
func TestPowerLoss(t *testing.T) {
	rounds := 40 * testenv.ReliabilityScale(t)
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "sync", false: "nosync"}[sync]
		t.Run(name, func(t *testing.T) {
			p := newPowerLoss(t, sync)
			for round := range rounds {
				p.round(round)
			}
			p.final(rounds)
			t.Logf("%s: %d crashes, %d acknowledged commits, %d kept through every later crash, %d lost",
				name, rounds, p.acked, p.kept, p.lost)
		})
	}
}

const (
	plAccounts = 20
	plInitial  = 1000
)

type powerLoss struct {
	t    *testing.T
	sync bool
	rng  *rand.Rand
	fs   *vfs.MemFS
	// ackedSet are the log sequence numbers whose Commit returned before
	// the last crash; next is the next sequence number.
	ackedSet map[uint64]bool
	next     atomic.Uint64

	acked, kept, lost int // totals over the rounds, for the log line
}

func newPowerLoss(t *testing.T, sync bool) *powerLoss {
	p := &powerLoss{t: t, sync: sync, rng: rand.New(rand.NewPCG(20, uint64(len(t.Name())))), fs: vfs.NewCrashableMem(), ackedSet: map[uint64]bool{}}
	db := p.open()
	txn := begin(t, db)
	for i := range plAccounts {
		require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(plInitial))))
	}
	require.NoError(t, txn.Commit())
	require.NoError(t, db.Close())
	return p
}

func (p *powerLoss) open() *DB {
	det, err := deadlock.New(deadlock.Options{})
	require.NoError(p.t, err)
	p.t.Cleanup(func() { det.Close() })
	kind := kinds[p.rng.IntN(len(kinds))]
	db, err := Open("db", OpenOptions{
		Options: Options{Manager: newManager(p.t, kind, 0, det), RangeLocking: kind == kindRange, Sync: p.sync},
		// A small memtable, so that flushes and compactions run too.
		Pebble: &pebble.Options{FS: p.fs, Logger: quiet{}, MemTableSize: 256 << 10},
	})
	require.NoError(p.t, err)
	return db
}

func logKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte("log/"), seq) }

// round checks the state the last crash left, runs transfers, and
// crashes at a random moment.
func (p *powerLoss) round(round int) {
	t := p.t
	db := p.open()
	p.check(db, round)

	workers := 1
	if p.sync {
		workers = 4
	}
	crashAfter := p.rng.IntN(120)
	var mu sync.Mutex
	var ackedNow []uint64
	reached := make(chan struct{}) // closed at the crashAfter-th commit
	if crashAfter == 0 {
		close(reached)
	}
	stop := make(chan struct{})
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq := p.next.Add(1)
				err := logTransfer(db, rng, seq)
				switch {
				case err == nil:
					mu.Lock()
					ackedNow = append(ackedNow, seq)
					if len(ackedNow) == crashAfter {
						close(reached)
					}
					mu.Unlock()
				case errors.Is(err, txnlock.ErrDeadlock), errors.Is(err, txnlock.ErrLockTimeout):
				default:
					errs <- err
					return
				}
			}
		})
	}
	select {
	case <-reached:
	case err := <-errs:
		require.NoError(t, err)
	}
	mu.Lock()
	acked := append([]uint64(nil), ackedNow...)
	mu.Unlock()
	// The crash: what a power loss now would leave on disk.
	crashed := p.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: p.rng.IntN(101), RNG: rand.New(rand.NewPCG(uint64(round), 3))})
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	p.fs = crashed
	for _, seq := range acked {
		p.ackedSet[seq] = true
	}
	p.acked += len(acked)
}

// final checks the state the last crash left.
func (p *powerLoss) final(rounds int) {
	db := p.open()
	defer db.Close()
	p.check(db, rounds)
}

// accountsTotal is the sum of the transfer workload's balances, read by
// txn.
func accountsTotal(t testing.TB, txn *Txn) int {
	t.Helper()
	total := 0
	for i := range plAccounts {
		n, err := strconv.Atoi(get(t, txn, string(acct(i))))
		require.NoError(t, err)
		total += n
	}
	return total
}

// check verifies the state after a crash: the total, and the log keys.
func (p *powerLoss) check(db *DB, round int) {
	t := p.t
	txn := begin(t, db)
	defer txn.Rollback()
	total := accountsTotal(t, txn)
	require.Equal(t, plAccounts*plInitial, total, "round %d: a commit was half applied", round)
	present := map[uint64]bool{}
	var maxSeq uint64
	require.NoError(t, txn.Scan(txnlock.DefaultColumnFamily, txnlock.Prefix([]byte("log/")), func(k, _ []byte) bool {
		seq := binary.BigEndian.Uint64(k[len("log/"):])
		present[seq] = true
		maxSeq = max(maxSeq, seq)
		return true
	}))
	lost := 0
	for seq := range p.ackedSet {
		if !present[seq] {
			lost++
		}
	}
	p.lost += lost
	if p.sync {
		// Checked again after every later crash.
		p.kept = len(p.ackedSet) - lost
		require.Zero(t, lost, "round %d: %d acknowledged Sync commits lost", round, lost)
		p.next.Store(max(p.next.Load(), maxSeq))
		return
	}
	p.kept += len(p.ackedSet) - lost
	p.ackedSet = map[uint64]bool{}
	require.Len(t, present, int(maxSeq), "round %d: the surviving commits are not a prefix (max %d)", round, maxSeq)
	p.next.Store(maxSeq) // the lost ones are written again
}

// logTransfer moves a random amount between two accounts, in random lock
// order, and writes the log key seq.
func logTransfer(db *DB, rng *rand.Rand, seq uint64) (err error) {
	txn, err := db.Begin(nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			txn.Rollback()
		}
	}()
	a, b := rng.IntN(plAccounts), rng.IntN(plAccounts-1)
	if b >= a {
		b++
	}
	bal := map[int]int{}
	for _, i := range []int{a, b} {
		v, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, acct(i), txnlock.Exclusive)
		if err != nil {
			return err
		}
		if bal[i], err = strconv.Atoi(string(v)); err != nil {
			return err
		}
	}
	amount := rng.IntN(50)
	bal[a] -= amount
	bal[b] += amount
	for _, i := range []int{a, b} {
		if err := txn.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(bal[i]))); err != nil {
			return err
		}
	}
	if err := txn.Put(bg, txnlock.DefaultColumnFamily, logKey(seq), []byte(fmt.Sprint(amount, " from ", a, " to ", b, padding))); err != nil {
		return err
	}
	return txn.Commit()
}

// padding makes log values large enough to fill memtables.
var padding = strings.Repeat(".", 128)
