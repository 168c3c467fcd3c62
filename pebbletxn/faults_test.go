package pebbletxn

import (
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

// faultyDisk injects errorfs.ErrInjected into the operations that match
// while it is on, reads with probability 1/every, writes 1/writeEvery,
// and counts them.
type faultyDisk struct {
	on         atomic.Bool
	match      func(op errorfs.Op) bool
	every      uint64
	writeEvery uint64
	injected   atomic.Uint64
	reads      atomic.Uint64 // of injected, the reads
	rng        *rand.Rand
	mu         sync.Mutex // guards rng
}

func (d *faultyDisk) MaybeError(op errorfs.Op) error {
	if !d.on.Load() || !d.match(op) {
		return nil
	}
	n := d.every
	if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
		n = d.writeEvery
	}
	d.mu.Lock()
	hit := d.rng.Uint64N(n) == 0
	d.mu.Unlock()
	if !hit {
		return nil
	}
	d.injected.Add(1)
	if op.Kind.ReadOrWrite() == errorfs.OpIsRead {
		d.reads.Add(1)
	}
	return errorfs.ErrInjected
}

func (d *faultyDisk) String() string { return "faultyDisk" }

func isSST(op errorfs.Op) bool { return strings.HasSuffix(op.Path, ".sst") }

// Failing reads and table writes: transfers run while 1 in 4 reads of
// tables fails, and 1 in 16 table writes of flushes and compactions (a
// flush writes many blocks: at 1 in 4 hardly one succeeds, and while
// flushes fail Pebble stalls every commit until one succeeds). A transfer that hits one gets a *StorageError wrapping the
// injected error (nothing else: no panic, no other error), rolls back and
// releases its locks. Afterwards no lock is held, the total is unchanged,
// and with the disk healthy again every account reads.
func TestFailingReadsAndTableWrites(t *testing.T) {
	target := uint64(300 * testenv.ReliabilityScale(t))
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			disk := &faultyDisk{rng: rand.New(rand.NewPCG(5, 6)), every: 4, writeEvery: 16, match: func(op errorfs.Op) bool {
				return isSST(op) && (op.Kind == errorfs.OpFileReadAt || op.Kind == errorfs.OpFileRead ||
					op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpCreate)
			}}
			det, err := deadlock.New(deadlock.Options{})
			require.NoError(t, err)
			defer det.Close()
			mgr := newManager(t, kind, 0, det)
			db, err := Open("db", OpenOptions{
				Options: Options{Manager: mgr, RangeLocking: kind == kindRange},
				// A tiny block cache and memtable: reads go to the tables,
				// writes flush often.
				// Compactions read tables too and mostly fail: L0 grows,
				// and at L0StopWritesThreshold Pebble would stall every
				// commit until one succeeds.
				Pebble: &pebble.Options{FS: errorfs.Wrap(vfs.NewMem(), disk), Logger: quiet{}, CacheSize: 1 << 10, MemTableSize: 256 << 10,
					L0StopWritesThreshold: 1 << 20},
			})
			require.NoError(t, err)
			defer db.Close()
			init := begin(t, db)
			for i := range plAccounts {
				require.NoError(t, init.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(plInitial))))
			}
			require.NoError(t, init.Commit())
			require.NoError(t, db.Pebble().Flush())
			disk.on.Store(true)

			var storage, committed atomic.Uint64
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			var seq atomic.Uint64
			for w := range 4 {
				rng := rand.New(rand.NewPCG(uint64(w), 8))
				wg.Go(func() {
					for disk.injected.Load() < target {
						err := logTransfer(db, rng, seq.Add(1))
						var se *StorageError
						switch {
						case err == nil:
							committed.Add(1)
						case errors.As(err, &se):
							if !errors.Is(err, errorfs.ErrInjected) || !errors.Is(err, ErrStorage) {
								errs <- err
								return
							}
							storage.Add(1)
						case errors.Is(err, txnlock.ErrDeadlock), errors.Is(err, txnlock.ErrLockTimeout):
						default:
							errs <- err
							return
						}
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("%s: commits stalled with %d faults injected", kind, disk.injected.Load())
			}
			disk.on.Store(false)
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Empty(t, mgr.Status().Locks, "a failed transaction left locks behind")
			require.Empty(t, mgr.Status().Waits)
			txn := begin(t, db)
			total := accountsTotal(t, txn)
			require.NoError(t, txn.Rollback())
			require.Equal(t, plAccounts*plInitial, total)
			t.Logf("%s: %d faults injected (%d reads, the rest table writes), %d transactions failed with a StorageError, %d committed; no lock left, total unchanged",
				kind, disk.injected.Load(), disk.reads.Load(), storage.Load(), committed.Load())
		})
	}
}
