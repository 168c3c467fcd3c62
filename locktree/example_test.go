package locktree_test

import (
	"fmt"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/locktree"
)

func mustClosed(a, b string) txnlock.Range {
	r, err := txnlock.Inclusive([]byte(a), []byte(b))
	if err != nil {
		panic(err)
	}
	return r
}

// A manager checks Conflicts, then records the grant with Acquire.
func Example() {
	tr := locktree.New()
	tr.Acquire(1, mustClosed("a", "k"), txnlock.Shared)
	tr.Acquire(2, mustClosed("d", "p"), txnlock.Shared)

	// txn 3 wants [f, m] Exclusive: blocked by both, each clipped to [f, m].
	tr.Conflicts(3, mustClosed("f", "m"), txnlock.Exclusive, func(owner txnlock.TxnID, held txnlock.Range, m txnlock.Mode) bool {
		fmt.Println("blocked by", owner, held, m)
		return true
	})

	// txn 1 commits; the caller wakes waiters that overlap what was released.
	tr.ReleaseAll(1, func(released txnlock.Range) { fmt.Println("released", released) })
	fmt.Println("still blocked:", tr.HasConflict(3, mustClosed("f", "m"), txnlock.Exclusive))

	tr.Ascend(func(l locktree.Lock) bool {
		fmt.Println(l.Owner, l.Range, l.Mode)
		return true
	})
	// Output:
	// blocked by txn 1 [f, k] S
	// blocked by txn 2 [f, m] S
	// released [a, k]
	// still blocked: true
	// txn 2 [d, p] S
}
