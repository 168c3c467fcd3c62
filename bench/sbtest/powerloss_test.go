package sbtest

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/testenv"
)

// Power loss under the sbtest table: with Sync, workers move k between
// rows (SELECT FOR UPDATE, UPDATE k, which moves secondary-key entries)
// and insert rows with AUTO-INC ids, on Pebble's crashable in-memory
// filesystem. At a random moment the test takes what a power loss would
// leave, reopens it and checks: the table is consistent (every row has its
// secondary-key entry and no entry lacks its row), sum(k) is unchanged,
// and every insert whose Commit returned before any crash so far is there.
// Each round picks a lock kind and a column-family layout.
func TestPowerLossTable(t *testing.T) {
	rounds := 15 * testenv.ReliabilityScale(t)
	rng := rand.New(rand.NewPCG(15, 20))
	fs := vfs.NewCrashableMem()
	opts := func() Options {
		locks := []LockKind{LockPoint, LockRange, LockPointSK}
		return Options{Dir: "db", FS: fs, Sync: true, TableSize: 30, Layout: LayoutPerIndex,
			Lock: locks[rng.IntN(len(locks))], LockTimeout: txnlock.WaitForever,
			MemTableSize: 256 << 10}
	}
	db, err := Open(opts())
	require.NoError(t, err)
	require.NoError(t, db.Prepare(bg))
	want, err := sumK(db)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	acked := map[int64]bool{}
	totalAcked := 0
	for round := range rounds + 1 {
		db, err := Open(opts())
		require.NoError(t, err)
		got, err := sumK(db)
		require.NoError(t, err)
		require.Equal(t, want, got, "round %d: sum(k) changed: a transfer was half applied", round)
		rep := verify(t, db)
		tx := db.Begin()
		rows, err := tx.RangeSelect(bg, 1, 1, 1<<62, false)
		require.NoError(t, err)
		require.NoError(t, tx.Rollback())
		present := make(map[int64]bool, len(rows))
		for _, r := range rows {
			present[r.ID] = true
		}
		for id := range acked {
			require.True(t, present[id], "round %d: acknowledged insert of id %d lost", round, id)
		}
		if round == rounds {
			t.Logf("%d crashes, %d acknowledged inserts kept, %d rows, table consistent, sum(k) unchanged", rounds, totalAcked, rep.Rows)
			require.NoError(t, db.Close())
			break
		}

		crashAfter := rng.IntN(40)
		var mu sync.Mutex
		var ids []int64
		commits := 0
		reached := make(chan struct{})
		if crashAfter == 0 {
			close(reached)
		}
		stop := make(chan struct{})
		errs := make(chan error, 4)
		var wg sync.WaitGroup
		for w := range 4 {
			wrng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					var id int64
					var err error
					if w%2 == 0 {
						err = transferK(db, wrng)
					} else {
						id, err = insertRow(db, wrng)
					}
					if errors.Is(err, txnlock.ErrDeadlock) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					if id != 0 {
						ids = append(ids, id)
					}
					if commits++; commits == crashAfter {
						close(reached)
					}
					mu.Unlock()
				}
			})
		}
		select {
		case <-reached:
		case err := <-errs:
			require.NoError(t, err)
		}
		mu.Lock()
		now := append([]int64(nil), ids...)
		mu.Unlock()
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(uint64(round), 7))})
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.NoError(t, db.Close())
		for _, id := range now {
			acked[id] = true
		}
		totalAcked += len(now)
		fs = crashed
	}
}

// insertRow inserts a row with k = 0 (sum(k) stays) and an AUTO-INC id.
func insertRow(db *DB, rng *rand.Rand) (int64, error) {
	tx := db.Begin()
	id, err := tx.InsertAuto(bg, 1, 0, RandomC(rng), RandomPad(rng))
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback()
		return 0, err
	}
	return id, nil
}
