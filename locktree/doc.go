// Package locktree is the data structure behind the range lock manager: a
// set of held range locks, each a transaction, a range of keys and a mode,
// with the queries a lock manager needs — who blocks this request, does the
// transaction already hold it, what does it hold — and the changes —
// acquire, release, release all.
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
// # Semantics
//
// Ranges keep the ends they were acquired with (txnlock.Inclusive,
// HalfOpen, Prefix, Point, or any NewRange), and any two ranges may
// overlap: PerconaFT's locktree shares a lock only between identical
// endpoints; this one has no such restriction. A transaction's own
// overlapping or touching ranges of one mode merge (per key the stronger
// mode wins); Holds, Ascend and Conflicts report each maximal run of keys
// where a transaction has one mode, with its endpoints exactly as
// acquired. Other transactions' overlapping Shared ranges stay as they
// were. Release of part of a range splits it; releasing keys a
// transaction does not hold is txnlock.ErrNotHeld and changes nothing.
//
// # Segments
//
// Internally the tree cuts the key order wherever the set of owners
// changes, and stores the pieces between the cuts: disjoint segments, each
// with its owners and their modes. Three Shared
// locks with different, overlapping endpoints:
//
//	txn 1 S  [a ─────────────── k]
//	txn 2 S        [d ─────────────────── p)
//	txn 3 S                         (m ─────────── t]
//	         ┌─────┬───────────┬───┬──────┬────────┐
//	segments │ 1   │ 1 2       │ 2 │ 2 3  │ 3      │
//	         └─────┴───────────┴───┴──────┴────────┘
//	         [a, d) [d, k]   (k, m] (m, p) [p, t]
//
// The layout depends only on who holds what, never on the order of the
// calls, and a query costs the segments it touches, not the locks held.
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
// 10,000 held ranges a conflict check costs a few hundred nanoseconds,
// against a few hundred microseconds for a scan of a list of the ranges.
//
// # Memory
//
// A held point range [k, k] costs one segment, about 90 bytes with 16-byte
// keys; a further owner of a shared segment costs about 24 bytes. Memory
// reports the tree's footprint, kept current as segments come and go, and
// within 5% of the heap the Go runtime measures for it: a manager can hold
// it to a budget. Trading precision for memory (escalation: a
// transaction's neighbouring Exclusive ranges made one) is the manager's
// policy, built from Holds, Conflicts and Acquire: a range that covers
// two held ranges and the free keys between them replaces them.
package locktree

// For maintainers: how the tree is built. (This comment is not the package
// doc; go doc does not show it.)
//
// Segments are canonical: none is empty, and two that touch have different
// owner sets. The segments live in a google/btree BTreeG. A B-tree cannot
// be augmented from outside (no max-end per subtree), and it need not be:
// segments are disjoint, so ordering them by end also orders them by
// start, and the segments overlapping [lo, hi) are found by one descent to
// the first segment that ends after lo and a walk forward while segments
// start before hi. Each transaction also has an unordered list of its
// segments (each segment stores its index in each owner's list), so
// releasing everything it holds costs what it holds, not the size of the
// tree.
//
// Every change goes through one primitive, rewrite: set txn's mode on the
// keys of [lo, hi) to f(old mode), then split, drop and merge segments in
// that stretch until the invariants hold again. Acquire is f = max(old,
// mode), Release and ReleaseAll are f = none. A transaction's range count (TxnCount) is
// kept by counting where its ranges start inside the stretch before and
// after the change.
//
// Memory: a segment is a 64-byte struct holding the key (up to 16 bytes
// inline, one allocation; longer keys get a second allocation; a range
// stores its start and end key in one string) and its first owner, plus
// its slot in the B-tree (~16 bytes) and in its owner's list (8 bytes).
// Further owners of a shared segment cost 16 bytes each, in one array, and
// 8 bytes in their lists. Memory() adds these up, rounding every
// allocation to the Go allocator's size class (TestMemoryAccounting,
// BenchmarkMemoryPerLock check it against runtime.MemStats); the
// conflict-check figure is BenchmarkConflicts'.
