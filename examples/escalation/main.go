// Command escalation shows the range manager under a memory budget: a
// transaction that locks row after row would outgrow MaxLockMemory, so
// the manager escalates, merging its adjacent exclusive locks into one
// range that covers them. The cost: the gaps between the rows are locked
// too, and another transaction's insert there now conflicts. An
// EscalationBarrier keeps the merge from crossing from one index into
// another.
//
//	go run ./examples/escalation
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/rangelock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	budget = 16 << 10 // bytes of lock memory
	rows   = 500      // per index
)

func run(w io.Writer) error {
	m, err := rangelock.New(rangelock.Options{
		WaitOptions:   txnlock.WaitOptions{LockTimeout: txnlock.NoWait},
		Stripes:       4,
		MaxLockMemory: budget,
		// Never merge a primary-key lock with a secondary-key lock.
		EscalationBarrier: func(_ txnlock.ColumnFamily, left, right txnlock.Range) bool {
			return !bytes.Equal(index(left), index(right))
		},
	})
	if err != nil {
		return err
	}
	defer m.Close()
	ctx := context.Background()
	// Txn 1 updates every even row: its primary key and its index entry.
	for i := range rows {
		for _, k := range []string{fmt.Sprintf("pk/%04d", 2*i), fmt.Sprintf("sk/%04d", 2*i)} {
			if err := m.Lock(ctx, txnlock.Request{Txn: 1, Range: txnlock.Point([]byte(k)), Mode: txnlock.Exclusive}); err != nil {
				return fmt.Errorf("lock %s: %w", k, err)
			}
		}
	}
	s := m.Stats()
	fmt.Fprintf(w, "txn 1 locked %d keys within a %d-byte budget: %t; escalations: %t\n", 2*rows, budget, s.LockMemory <= budget, s.Escalations > 0)
	st := m.Status()
	first, last := st.Locks[0], st.Locks[len(st.Locks)-1]
	fmt.Fprintf(w, "it holds fewer locks than it asked for: %t\n", len(st.Locks) < 2*rows)
	fmt.Fprintf(w, "the first covers pk/0000 and the gap pk/0001: %t %t, and no sk key: %t\n",
		first.Range.Contains([]byte("pk/0000")), first.Range.Contains([]byte("pk/0001")), !first.Range.Contains([]byte("sk/0000")))
	fmt.Fprintf(w, "the last is in the index: %t\n", bytes.Equal(index(last.Range), []byte("sk/")))

	err = m.Lock(ctx, txnlock.Request{Txn: 2, Range: txnlock.Point([]byte("pk/0001")), Mode: txnlock.Exclusive})
	fmt.Fprintf(w, "txn 2's insert of pk/0001, a key txn 1 never asked for, conflicts: %t\n", errors.Is(err, txnlock.ErrLockNoWait))
	if err := m.UnlockAll(1); err != nil {
		return err
	}
	fmt.Fprintf(w, "after txn 1 ends: %d locks, %d bytes\n", len(m.Status().Locks), m.Stats().LockMemory)
	return nil
}

// index is the prefix ("pk/" or "sk/") of r's start key.
func index(r txnlock.Range) []byte {
	k := r.Start().Key()
	if len(k) > 3 {
		k = k[:3]
	}
	return k
}
