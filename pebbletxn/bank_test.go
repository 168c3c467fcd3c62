package pebbletxn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
)

const (
	bankAccounts = 16
	bankInitial  = 100
)

func acct(i int) []byte { return []byte(fmt.Sprintf("acct/%03d", i)) }

// Concurrent transfers between random accounts, locking the two accounts in
// random order (so deadlocks happen and are resolved by the detector). The
// total is unchanged at the end and in every consistent read taken while
// the transfers run: snapshots, and locking scans of all accounts.
func TestBankTransferInvariant(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			det, err := deadlock.New(deadlock.Options{})
			require.NoError(t, err)
			defer det.Close()
			e := openMemWith(t, kind, newManager(t, kind, 0, det))
			init := begin(t, e.db)
			for i := range bankAccounts {
				require.NoError(t, init.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(bankInitial))))
			}
			require.NoError(t, init.Commit())
			const want = bankAccounts * bankInitial
			all, err := txnlock.HalfOpen([]byte("acct/"), []byte("acct0"))
			require.NoError(t, err)

			const workers, transfers = 4, 150
			var wg sync.WaitGroup
			var mu sync.Mutex
			retries := 0
			errs := make(chan error, workers+2)
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for done := 0; done < transfers; {
						err := transfer(e.db, rng)
						switch {
						case err == nil:
							done++
						case errors.Is(err, txnlock.ErrDeadlock), errors.Is(err, txnlock.ErrLockTimeout):
							mu.Lock()
							retries++
							mu.Unlock()
						default:
							errs <- err
							return
						}
					}
				})
			}
			stop := make(chan struct{})
			var readers sync.WaitGroup
			readers.Go(func() { // snapshot reads
				for {
					select {
					case <-stop:
						return
					default:
					}
					s, err := e.db.NewSnapshot()
					if err != nil {
						errs <- err
						return
					}
					sum := sumScan(t, func(fn func(k, v []byte) bool) error { return s.Scan(txnlock.DefaultColumnFamily, all, fn) })
					s.Close()
					if sum != want {
						errs <- fmt.Errorf("snapshot total %d, want %d", sum, want)
						return
					}
				}
			})
			readers.Go(func() { // locking reads (bounded: each one queued
				// behind a transfer's lock makes that transfer's next request
				// close a cycle, so an unbounded loop mostly measures retries)
				for range 200 {
					select {
					case <-stop:
						return
					default:
					}
					txn, err := e.db.Begin(nil)
					if err != nil {
						errs <- err
						return
					}
					var serr error
					sum := sumScan(t, func(fn func(k, v []byte) bool) error {
						serr = txn.ScanForUpdate(bg, txnlock.DefaultColumnFamily, all, txnlock.Shared, fn)
						return nil
					})
					txn.Rollback()
					if errors.Is(serr, txnlock.ErrDeadlock) || errors.Is(serr, txnlock.ErrLockTimeout) {
						continue
					}
					if serr != nil {
						errs <- serr
						return
					}
					if sum != want {
						errs <- fmt.Errorf("locking-scan total %d, want %d", sum, want)
						return
					}
				}
			})
			wg.Wait()
			close(stop)
			readers.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			s, err := e.db.NewSnapshot()
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, want, sumScan(t, func(fn func(k, v []byte) bool) error { return s.Scan(txnlock.DefaultColumnFamily, all, fn) }))
			require.Empty(t, e.mgr.Status().Locks)
			t.Logf("%s: %d transfers, %d retried after a deadlock or timeout", kind, workers*transfers, retries)
		})
	}
}

func sumScan(t testing.TB, scan func(fn func(k, v []byte) bool) error) int {
	sum := 0
	err := scan(func(_, v []byte) bool {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			panic(err)
		}
		sum += n
		return true
	})
	if err != nil {
		panic(err)
	}
	return sum
}

// transfer moves a random amount between two random accounts, locking them
// in random order. On a lock error it rolls back and returns the error.
func transfer(db *DB, rng *rand.Rand) (err error) {
	txn, err := db.Begin(nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			txn.Rollback()
		}
	}()
	from, to := rng.IntN(bankAccounts), rng.IntN(bankAccounts-1)
	if to >= from {
		to++
	}
	first, second := from, to
	if rng.IntN(2) == 0 {
		first, second = to, from
	}
	bal := map[int]int{}
	for _, i := range []int{first, second} {
		v, found, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, acct(i), txnlock.Exclusive)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("account %d missing", i)
		}
		if bal[i], err = strconv.Atoi(string(v)); err != nil {
			return err
		}
	}
	amount := rng.IntN(20)
	bal[from] -= amount
	bal[to] += amount
	for _, i := range []int{from, to} {
		if err := txn.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(bal[i]))); err != nil {
			return err
		}
	}
	return txn.Commit()
}
