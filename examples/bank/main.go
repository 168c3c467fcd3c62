// Command bank moves money between accounts with pessimistic
// transactions on Pebble (pebbletxn), on disk. Clients pick two accounts
// and lock them in the order they come, so two clients that pick the same
// pair the other way round deadlock; the detector fails one of them, which
// rolls back and tries again, as an application would. After the clients
// finish, the database is closed and reopened, and the sum of the balances
// is what it was at the start.
//
//	go run ./examples/bank [-dir DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pebbletxn"
	"github.com/txnlock/txnlock/pointlock"
)

const (
	accounts  = 5
	opening   = 1000 // each account's opening balance
	clients   = 4
	transfers = 100 // per client
)

func main() {
	dir := flag.String("dir", "", "the database's directory (default: a new temporary one, removed at the end)")
	flag.Parse()
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "bank-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	if err := run(os.Stdout, *dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir string) error {
	b, err := openBank(dir)
	if err != nil {
		return err
	}
	if err := b.open(context.Background()); err != nil {
		b.close()
		return err
	}
	retries, err := b.transferAll()
	if cerr := b.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d clients made %d transfers between %d accounts (%d retried after a deadlock or a timeout)\n",
		clients, clients*transfers, accounts, retries)

	b, err = openBank(dir) // reopen: the balances come from disk
	if err != nil {
		return err
	}
	defer b.close()
	sum, err := b.sum()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after reopening: the balances sum to %d (opened with %d)\n", sum, accounts*opening)
	if sum != accounts*opening {
		return fmt.Errorf("bank: sum %d, want %d", sum, accounts*opening)
	}
	return nil
}

// bank is the database and its lock manager.
type bank struct {
	pdb *pebble.DB
	det *deadlock.Detector
	m   *pointlock.Manager
	db  *pebbletxn.DB
}

// openBank opens the database in dir, creating it if needed.
func openBank(dir string) (*bank, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{Logger: pebbletxn.QuietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("open pebble: %w", err)
	}
	b := &bank{pdb: pdb}
	if b.det, err = deadlock.New(deadlock.Options{}); err == nil {
		b.m, err = pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: b.det}})
	}
	if err == nil {
		b.db, err = pebbletxn.New(pdb, pebbletxn.Options{Manager: b.m})
	}
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// close closes what openBank opened.
func (b *bank) close() error {
	var errs []error
	if b.db != nil {
		errs = append(errs, b.db.Close())
	}
	if b.m != nil {
		errs = append(errs, b.m.Close())
	}
	if b.det != nil {
		errs = append(errs, b.det.Close())
	}
	errs = append(errs, b.pdb.Close())
	return errors.Join(errs...)
}

func account(i int) []byte { return []byte(fmt.Sprintf("account/%02d", i)) }

// open gives every account its opening balance, in one transaction.
func (b *bank) open(ctx context.Context) error {
	t, err := b.db.Begin(nil)
	if err != nil {
		return err
	}
	for i := range accounts {
		if err := t.Put(ctx, txnlock.DefaultColumnFamily, account(i), []byte(strconv.Itoa(opening))); err != nil {
			t.Rollback()
			return err
		}
	}
	return t.Commit()
}

// transferAll runs the clients and returns how many transfers were
// retried.
func (b *bank) transferAll() (int64, error) {
	var retries atomic.Int64
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for range transfers {
				from, to := rng.IntN(accounts), rng.IntN(accounts-1)
				if to >= from {
					to++
				}
				for {
					err := b.transfer(context.Background(), from, to, 1+rng.IntN(50))
					if errors.Is(err, txnlock.ErrDeadlock) || errors.Is(err, txnlock.ErrLockTimeout) {
						retries.Add(1)
						continue
					}
					if err != nil {
						errs[c] = err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	return retries.Load(), errors.Join(errs...)
}

// transfer moves amount from one account to another in one transaction,
// locking the two accounts in the order given.
func (b *bank) transfer(ctx context.Context, from, to, amount int) error {
	t, err := b.db.Begin(nil)
	if err != nil {
		return err
	}
	cf := txnlock.DefaultColumnFamily
	var bal [2]int
	for i, a := range []int{from, to} {
		if i == 1 {
			time.Sleep(100 * time.Microsecond) // the application's work between the two reads
		}
		v, _, err := t.GetForUpdate(ctx, cf, account(a), txnlock.Exclusive)
		if err != nil {
			t.Rollback()
			return err
		}
		if bal[i], err = strconv.Atoi(string(v)); err != nil {
			t.Rollback()
			return fmt.Errorf("account %d: balance %q: %w", a, v, err)
		}
	}
	bal[0] -= amount
	bal[1] += amount
	for i, a := range []int{from, to} {
		if err := t.Put(ctx, cf, account(a), []byte(strconv.Itoa(bal[i]))); err != nil {
			t.Rollback()
			return err
		}
	}
	return t.Commit()
}

// sum reads every balance in one transaction.
func (b *bank) sum() (int, error) {
	t, err := b.db.Begin(nil)
	if err != nil {
		return 0, err
	}
	defer t.Rollback()
	sum := 0
	for i := range accounts {
		v, found, err := t.Get(txnlock.DefaultColumnFamily, account(i))
		if err != nil || !found {
			return 0, fmt.Errorf("account %d: found %t: %v", i, found, err)
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}
