package pebbletxn_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pebbletxn"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// A pessimistic transaction on Pebble: writes lock their keys until
// Commit, so a second writer of the same key waits (here: fails at once,
// with NoWait).
func Example() {
	m, err := pointlock.New(pointlock.Options{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	// Open opens the Pebble store too (here in memory; a directory name
	// and no Pebble options for one on disk). Quiet keeps Pebble's
	// informational messages off stderr.
	db, err := pebbletxn.Open("", pebbletxn.OpenOptions{
		Options: pebbletxn.Options{Manager: m},
		Pebble:  &pebble.Options{FS: vfs.NewMem()},
		Quiet:   true,
	})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	cf := txnlock.DefaultColumnFamily

	t1, _ := db.Begin(nil)
	fmt.Println(t1.Put(ctx, cf, []byte("balance/alice"), []byte("100")))
	t2, _ := db.Begin(&pebbletxn.TxnOptions{LockTimeout: txnlock.NoWait})
	err = t2.Put(ctx, cf, []byte("balance/alice"), []byte("0"))
	fmt.Println("t2 waits for t1's lock:", errors.Is(err, txnlock.ErrLockNoWait))
	t2.Rollback()
	fmt.Println(t1.Commit())

	t3, _ := db.Begin(nil)
	v, found, err := t3.GetForUpdate(ctx, cf, []byte("balance/alice"), txnlock.Exclusive)
	fmt.Printf("%s %t %v\n", v, found, err)
	fmt.Println(t3.Commit())
	// Output:
	// <nil>
	// t2 waits for t1's lock: true
	// <nil>
	// 100 true <nil>
	// <nil>
}

// With a range lock manager, ScanForUpdate locks the scanned range itself:
// an insert into a gap of it waits until the scanning transaction ends.
func ExampleTxn_ScanForUpdate() {
	// New wraps a Pebble DB opened by the caller (who closes it after the
	// DB); QuietLogger keeps Pebble's informational messages off stderr.
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: pebbletxn.QuietLogger{}})
	if err != nil {
		panic(err)
	}
	defer pdb.Close()
	m, err := rangelock.New(rangelock.Options{})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	db, err := pebbletxn.New(pdb, pebbletxn.Options{Manager: m, RangeLocking: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	orders, err := db.CreateColumnFamily("orders")
	if err != nil {
		panic(err)
	}
	load, _ := db.Begin(nil)
	for _, k := range []string{"o/10", "o/20", "o/30"} {
		load.Put(ctx, orders, []byte(k), []byte("open"))
	}
	fmt.Println(load.Commit())

	scan, _ := db.Begin(nil)
	r, _ := txnlock.Inclusive([]byte("o/10"), []byte("o/30"))
	scan.ScanForUpdate(ctx, orders, r, txnlock.Exclusive, func(k, v []byte) bool {
		fmt.Printf("%s=%s\n", k, v)
		return true
	})
	insert, _ := db.Begin(&pebbletxn.TxnOptions{LockTimeout: txnlock.NoWait})
	err = insert.Put(ctx, orders, []byte("o/15"), []byte("open"))
	fmt.Println("insert into the gap waits:", errors.Is(err, txnlock.ErrLockNoWait))
	insert.Rollback()
	fmt.Println(scan.Commit())
	// Output:
	// <nil>
	// o/10=open
	// o/20=open
	// o/30=open
	// insert into the gap waits: true
	// <nil>
}
