package pebbletxn

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/testenv"
)

// A failing WAL: Sync transfers run until, at a random moment, every
// write and sync of the WAL fails. Pebble treats that as fatal (it calls
// Logger.Fatalf, which stops the process with its default logger); the DB
// of Open turns it into a *StorageError wrapping a *FatalError in the
// committing goroutine, and fails every later call with it. The store,
// reopened from what was synced before the failure (a power loss at the
// same moment), has every acknowledged commit and the same total.
//
// The failure starts after at most 300 transfers, far below what fills
// Pebble's first memtable (256 KB), so the WAL never rotates in a round:
// Pebble closes the old WAL during a rotation with its DB mutex released,
// and a failure there panics past a deferred unlock, which is
// "sync: unlock of unlocked mutex", a fatal error no caller can recover
// (see FatalError).
func TestFailingWAL(t *testing.T) {
	rounds := 24 * testenv.ReliabilityScale(t)
	var fatals, acked int
	for round := range rounds {
		f, a := walFailureRound(t, round)
		fatals += f
		acked += a
	}
	t.Logf("%d WAL failures, %d calls failed with a FatalError, %d acknowledged Sync commits, 0 lost", rounds, fatals, acked)
}

func walFailureRound(t *testing.T, round int) (fatals, ackedN int) {
	rng := rand.New(rand.NewPCG(uint64(round), 11))
	inner := vfs.NewCrashableMem()
	var failing atomic.Bool
	isWAL := func(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".log") }
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && isWAL(op) && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	})
	det, err := deadlock.New(deadlock.Options{})
	require.NoError(t, err)
	defer det.Close()
	open := func(fs vfs.FS) *DB {
		kind := kinds[round%len(kinds)]
		db, err := Open("db", OpenOptions{
			Options: Options{Manager: newManager(t, kind, 0, det), RangeLocking: kind == kindRange, Sync: true},
			Pebble:  &pebble.Options{FS: fs, Logger: quiet{}, MemTableSize: 256 << 10},
		})
		require.NoError(t, err)
		return db
	}
	db := open(errorfs.Wrap(inner, inj))
	init := begin(t, db)
	for i := range plAccounts {
		require.NoError(t, init.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(plInitial))))
	}
	require.NoError(t, init.Commit())

	var mu sync.Mutex
	var acked []uint64
	var seq atomic.Uint64
	var fatal atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wrng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
		wg.Go(func() {
			for {
				s := seq.Add(1)
				err := logTransfer(db, wrng, s)
				var fe *FatalError
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, s)
					mu.Unlock()
				case errors.Is(err, txnlock.ErrDeadlock), errors.Is(err, txnlock.ErrLockTimeout):
				case errors.As(err, &fe) && errors.Is(err, ErrStorage):
					fatal.Add(1)
					return // the DB fails every later call
				default:
					errs <- err
					return
				}
			}
		})
	}
	for start := uint64(rng.IntN(300)); seq.Load() < start && len(errs) == 0; {
		time.Sleep(50 * time.Microsecond)
	}
	failing.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("round %d: transactions hang after the WAL failed", round)
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, fatal.Load(), "round %d: the WAL failure reached no transaction", round)
	_, err = db.Begin(nil)
	var fe *FatalError
	require.ErrorAs(t, err, &fe, "a DB that saw a fatal error must refuse new transactions")
	require.ErrorContains(t, err, "pebbletxn: begin: storage failure: pebble fatal error:")
	_ = db.Close() // Pebble's Close reports the WAL failure again

	db = open(inner.CrashClone(vfs.CrashCloneCfg{}))
	defer db.Close()
	txn := begin(t, db)
	defer txn.Rollback()
	total := accountsTotal(t, txn)
	require.Equal(t, plAccounts*plInitial, total, "round %d", round)
	for _, s := range acked {
		_, found, err := txn.Get(txnlock.DefaultColumnFamily, binary.BigEndian.AppendUint64([]byte("log/"), s))
		require.NoError(t, err)
		require.True(t, found, "round %d: acknowledged commit %d lost", round, s)
	}
	return int(fatal.Load()), len(acked)
}
