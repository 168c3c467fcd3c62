// Command columnfamilies shows locking per column family, as MyRocks
// keeps a table and each of its indexes in column families of their own:
// the same key bytes in two column families are two locks, a lock table
// reports each lock with its column family, and a column family cannot be
// dropped from a manager while a lock in it is held.
//
//	go run ./examples/columnfamilies
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pebbletxn"
	"github.com/txnlock/txnlock/pointlock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: pebbletxn.QuietLogger{}})
	if err != nil {
		return err
	}
	defer pdb.Close()
	m, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{LockTimeout: txnlock.NoWait}})
	if err != nil {
		return err
	}
	defer m.Close()
	db, err := pebbletxn.New(pdb, pebbletxn.Options{Manager: m})
	if err != nil {
		return err
	}
	defer db.Close()
	users, err := db.CreateColumnFamily("users") // primary key: id -> email
	if err != nil {
		return err
	}
	byEmail, err := db.CreateColumnFamily("users_by_email") // index: email -> id
	if err != nil {
		return err
	}
	for _, name := range []string{pebbletxn.DefaultColumnFamilyName, "users", "users_by_email"} {
		cf, _ := db.ColumnFamily(name)
		fmt.Fprintf(w, "column family %q is %v in the manager\n", name, cf)
	}

	ctx := context.Background()
	// Txn 1 writes the row "7" and its index entry; txn 2 writes an index
	// entry whose key is also "7": another column family, another lock.
	t1, err := db.Begin(nil)
	if err != nil {
		return err
	}
	t2, err := db.Begin(nil)
	if err != nil {
		return err
	}
	if err := t1.Put(ctx, users, []byte("7"), []byte("ann@example.com")); err != nil {
		return err
	}
	if err := t1.Put(ctx, byEmail, []byte("ann@example.com"), []byte("7")); err != nil {
		return err
	}
	if err := t2.Put(ctx, byEmail, []byte("7"), []byte("an odd email, but a key like any")); err != nil {
		return err
	}
	err = t2.Put(ctx, users, []byte("7"), []byte("bob@example.com"))
	fmt.Fprintf(w, "txn %d's write of key 7 in users conflicts with txn %d: %t\n", t2.ID(), t1.ID(), errors.Is(err, txnlock.ErrLockNoWait))
	fmt.Fprint(w, m.Status())

	err = m.DropColumnFamily(byEmail)
	fmt.Fprintf(w, "drop %v while locked refused as in use: %t\n", byEmail, errors.Is(err, txnlock.ErrColumnFamilyInUse))
	if err := t1.Commit(); err != nil {
		return err
	}
	if err := t2.Rollback(); err != nil {
		return err
	}
	fmt.Fprintf(w, "locks held after commit and rollback: %d\n", m.Stats().CurrentLocks)
	return nil
}
