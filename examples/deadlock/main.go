// Command deadlock shows a deadlock that crosses two column families and
// two managers — one point lock and one range lock — found by one shared
// detector, and the report the victim gets.
//
//	go run ./examples/deadlock
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	det, err := deadlock.New(deadlock.Options{})
	if err != nil {
		return err
	}
	defer det.Close()
	wait := txnlock.WaitOptions{Detector: det, LockTimeout: txnlock.WaitForever}
	rows, err := pointlock.New(pointlock.Options{WaitOptions: wait})
	if err != nil {
		return err
	}
	defer rows.Close()
	index, err := rangelock.New(rangelock.Options{WaitOptions: wait})
	if err != nil {
		return err
	}
	defer index.Close()
	const indexCF = txnlock.ColumnFamily(1)
	if err := index.AddColumnFamily(indexCF); err != nil {
		return err
	}

	ctx := context.Background()
	row := txnlock.Point([]byte("orders/17"))
	gap, _ := txnlock.Inclusive([]byte("k/100"), []byte("k/200"))
	// txn 1 locks the row, txn 2 the index range; then each asks for the
	// other's lock.
	if err := rows.Lock(ctx, txnlock.Request{Txn: 1, Range: row, Mode: txnlock.Exclusive}); err != nil {
		return err
	}
	if err := index.Lock(ctx, txnlock.Request{Txn: 2, CF: indexCF, Range: gap, Mode: txnlock.Exclusive}); err != nil {
		return err
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[1] = index.Lock(ctx, txnlock.Request{Txn: 1, CF: indexCF, Range: txnlock.Point([]byte("k/150")), Mode: txnlock.Exclusive})
		if errs[1] != nil {
			rows.UnlockAll(1) // the victim rolls back
		}
	}()
	go func() {
		defer wg.Done()
		errs[2] = rows.Lock(ctx, txnlock.Request{Txn: 2, Range: row, Mode: txnlock.Exclusive})
		if errs[2] != nil {
			index.UnlockAll(2)
		}
	}()
	wg.Wait()
	for txn := 1; txn <= 2; txn++ {
		var d *txnlock.DeadlockError
		if errors.As(errs[txn], &d) {
			fmt.Fprintf(w, "txn %d was chosen as the victim: %v\n", txn, d)
		} else if errs[txn] == nil {
			fmt.Fprintf(w, "txn %d got its lock once the victim rolled back\n", txn)
		} else {
			return fmt.Errorf("txn %d: unexpected error: %w", txn, errs[txn])
		}
	}
	rows.UnlockAll(1)
	rows.UnlockAll(2)
	index.UnlockAll(1)
	index.UnlockAll(2)
	// The detector keeps the recent deadlocks; the newest reads as
	// InnoDB's LATEST DETECTED DEADLOCK.
	if h := det.History(); len(h) > 0 {
		fmt.Fprint(w, h[len(h)-1].Report())
	}
	fmt.Fprintf(w, "detector: %+v\n", det.Stats())
	return nil
}
