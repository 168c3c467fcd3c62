package sbtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// sumK adds up k over table 1 in one snapshot of the committed data.
func sumK(db *DB) (int64, error) {
	snap, err := db.tdb.NewSnapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	t := db.tables[1]
	var sum int64
	var derr error
	err = snap.Scan(t.pk, txnlock.Prefix(t.pkPrefix), func(k, v []byte) bool {
		r, err := decodeRow(0, v)
		sum += r.K
		derr = err
		return err == nil
	})
	if err == nil {
		err = derr
	}
	return sum, err
}

// Bank transfers on sbtest rows: each transaction moves an amount of k
// from one row to another (SELECT ... FOR UPDATE both, in random order,
// then UPDATE k=k-x and k=k+x, which move SK entries). Sum(k) is the same
// in every snapshot taken while they run and at the end, and Verify
// passes, under each lock kind.
func TestBankTransferOnRows(t *testing.T) {
	for _, lock := range []LockKind{LockPoint, LockRange, LockTable} {
		t.Run(string(lock), func(t *testing.T) {
			db := open(t, Options{Lock: lock, TableSize: 30, LockTimeout: txnlock.WaitForever})
			want, err := sumK(db)
			require.NoError(t, err)
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for w := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					for done := 0; done < 100; {
						err := transferK(db, rng)
						if errors.Is(err, txnlock.ErrDeadlock) {
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						done++
					}
				})
			}
			stop := make(chan struct{})
			var reader sync.WaitGroup
			reader.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					got, err := sumK(db)
					if err == nil && got != want {
						err = fmt.Errorf("snapshot sum(k) = %d, want %d", got, want)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
			wg.Wait()
			close(stop)
			reader.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			got, err := sumK(db)
			require.NoError(t, err)
			require.Equal(t, want, got)
			verify(t, db)
		})
	}
}

// transferK moves a random amount of k between two random rows of table 1.
func transferK(db *DB, rng *rand.Rand) (err error) {
	tx := db.Begin()
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	from, to := 1+rng.Int64N(30), 1+rng.Int64N(29)
	if to >= from {
		to++
	}
	first, second := from, to
	if rng.IntN(2) == 0 {
		first, second = second, first
	}
	for _, id := range []int64{first, second} {
		if _, found, err := tx.SelectForUpdate(bg, 1, id); err != nil || !found {
			return fmt.Errorf("select %d: found=%t: %w", id, found, err)
		}
	}
	amount := 1 + rng.Int64N(10)
	if _, err := tx.UpdateIndexBy(bg, 1, from, -amount); err != nil {
		return err
	}
	if _, err := tx.UpdateIndexBy(bg, 1, to, amount); err != nil {
		return err
	}
	return tx.Commit()
}
