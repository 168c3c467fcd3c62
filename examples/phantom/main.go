// Command phantom shows why range locks exist: transaction 1 scans ids
// [10, 20] for update; transaction 2's insert of id 15 — into the gap,
// where no key existed to lock — waits until transaction 1 commits.
//
//	go run ./examples/phantom
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/rangelock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	m, err := rangelock.New(rangelock.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	ctx := context.Background()
	scan, _ := txnlock.Inclusive([]byte("id/10"), []byte("id/20"))
	if err := m.Lock(ctx, txnlock.Request{Txn: 1, Range: scan, Mode: txnlock.Exclusive}); err != nil {
		return err
	}
	fmt.Fprintf(w, "txn 1 locked %v for its scan\n", scan)

	inserted := make(chan error, 1)
	go func() {
		inserted <- m.Lock(ctx, txnlock.Request{Txn: 2, Range: txnlock.Point([]byte("id/15")), Mode: txnlock.Exclusive})
	}()
	// Wait until the manager shows txn 2 waiting (no sleeps as signals).
	for len(m.Status().Waits) == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Fprintf(w, "txn 2's insert of id/15 waits:\n%v", m.Status())

	if err := m.UnlockAll(1); err != nil { // commit
		return err
	}
	if err := <-inserted; err != nil {
		return err
	}
	fmt.Fprintf(w, "txn 1 committed; txn 2 inserted id/15:\n%v", m.Status())
	return m.UnlockAll(2)
}
