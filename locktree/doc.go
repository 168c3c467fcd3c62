// Package locktree is the data structure behind the range lock manager: a
// set of held range locks, each a transaction, a range of keys and a mode,
// with the queries a lock manager needs — who blocks this request, does the
// transaction already hold it, what does it hold — and the changes —
// acquire, release, release all, escalate.
//
//	tr := locktree.New()
//	if !tr.HasConflict(txn, r, mode) { // the manager checks, then records
//		tr.Acquire(txn, r, mode)
//	}
//	tr.ReleaseAll(txn, func(released txnlock.Range) {
//		// wake the waiters that overlap released
//	})
//
// It is pure: no goroutines, no waiting, no locking, no clock. A Tree is not
// safe for concurrent use; the manager's mutex guards it, and the manager
// owns the wait queues, the deadlock detector and the decision whether a
// request may be granted (Acquire records a grant; it does not check one).
//
// It is not a multiset of acquisitions: what a transaction holds is a set of
// keys, each with one mode (the root Manager's locks are sets, not
// counters). Acquiring [a, c] and then [b, d] holds [a, d]; releasing [a, c]
// then leaves (c, d]. Nor is it a general interval index: its queries are the
// lock manager's.
//
// # Segments
//
// A range is a set of keys between two positions (txnlock.Bound: just
// before a key, just after a key, −∞, +∞). The tree cuts the key order at
// every position where the set of owners changes, and stores the pieces
// between the cuts: disjoint segments, each with its owners and their
// modes. Three Shared locks with different, overlapping endpoints:
//
//	txn 1 S  [a ─────────────── k]
//	txn 2 S        [d ─────────────────── p)
//	txn 3 S                         (m ─────────── t]
//	         ┌─────┬───────────┬───┬──────┬────────┐
//	segments │ 1   │ 1 2       │ 2 │ 2 3  │ 3      │
//	         └─────┴───────────┴───┴──────┴────────┘
//	         [a, d) [d, k]   (k, m] (m, p) [p, t]
//
// Segments are canonical: none is empty, and two that touch have different
// owner sets, so the layout depends only on who holds what, not on the
// order of the calls. A transaction's range is a maximal run of touching
// segments where it has one mode; that is what Holds, Ascend and Conflicts
// report, endpoints exactly as acquired (PerconaFT's locktree shares a lock
// only between identical endpoints; this one has no such restriction).
// Acquiring merges a transaction's own overlapping or touching ranges (per
// key the stronger mode wins), releasing splits them.
//
// The segments live in a google/btree BTreeG. A B-tree cannot be augmented
// from outside (no max-end per subtree), and it need not be: segments are
// disjoint, so ordering them by end also orders them by start, and the
// segments overlapping [lo, hi) are found by one descent to the first
// segment that ends after lo and a walk forward while segments start before
// hi. Each transaction also has an unordered list of its segments (each
// segment stores its index in each owner's list), so releasing everything
// it holds costs what it holds, not the size of the tree.
//
// Every change goes through one primitive, rewrite: set txn's mode on the
// keys of [lo, hi) to f(old mode), then split, drop and merge segments in
// that stretch until the invariants hold again. Acquire is f = max(old,
// mode), Release and ReleaseAll are f = none, Escalate is f = Exclusive on
// the keys between two ranges. A transaction's range count (TxnCount) is
// kept by counting where its ranges start inside the stretch before and
// after the change.
//
// # Costs
//
// With n segments, k of them overlapping the range of a call, and h
// segments of the transaction: Conflicts, HasConflict and Covered are
// O(log n + k); Acquire and Release are O(log n + k) plus one B-tree insert
// or delete per segment created or removed (a fresh point lock is one
// descent to look and one to insert; its release one to look and one to
// delete); ReleaseAll is O(h log n); Holds is O(h log h); Ascend is O(n).
// Segments with several owners cost a factor of their owner count. On
// 10,000 held ranges a conflict check costs a few hundred nanoseconds
// against a few hundred microseconds for a brute-force list
// (BenchmarkConflicts).
//
// # Memory
//
// A held point range [k, k] costs one segment: a 64-byte struct holding
// the key (up to 16 bytes inline, one allocation; longer keys get a second
// allocation; a range stores its start and end key in one string) and its
// first owner, plus its slot in the B-tree (~16 bytes) and in its owner's
// list (8 bytes). Further owners of a shared segment cost 16 bytes each, in
// one array, and 8 bytes in their lists. Memory() adds these up, rounding every allocation to the Go
// allocator's size class, and keeps the sum current as segments come and
// go. With 16-byte keys a held point costs about 90 bytes, and Memory() is
// within 5% of the heap measured by runtime.MemStats (TestMemoryAccounting,
// BenchmarkMemoryPerLock).
//
// # Escalation
//
// When a manager's lock memory exceeds its budget it calls Escalate, which
// trades precision for memory: a transaction's neighbouring Exclusive
// ranges become one range that covers the keys between them, saving a
// segment per join. A join never crosses keys another transaction holds (it
// must not create a conflict with a granted lock), nor a place where the
// caller's barrier says no (for example, keys a waiting request wants).
// Every key a transaction held stays held.
package locktree
