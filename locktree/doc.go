// Package locktree is the data structure behind the range lock manager: a
// set of held range locks, each a transaction, a range of keys and a mode,
// with the queries a lock manager needs — who blocks this request, does the
// transaction already hold it, what does it hold — and the changes —
// acquire, release, release all, escalate.
//
// It is pure: no goroutines, no waiting, no locking, no clock. A Tree is not
// safe for concurrent use; the manager's mutex guards it, and the manager
// owns the wait queues, the deadlock detector and the decision whether a
// request may be granted (Acquire records a grant; it does not check one).
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
// The segments live in a google/btree BTreeG ordered by start. A B-tree
// cannot be augmented from outside (no max-end per subtree), and it need
// not be: segments are disjoint, so the segments overlapping a range are
// found by one descent to its start and a walk forward. Each transaction
// also has an unordered list of its segments (each segment stores its index
// in each owner's list), so releasing everything it holds costs what it
// holds, not the size of the tree.
//
// # Costs
//
// With n segments, k of them overlapping the range of a call, and h
// segments of the transaction: Conflicts, HasConflict and Covered are
// O(log n + k); Acquire and Release are O(log n + k) plus one B-tree insert
// or delete per segment created or removed; ReleaseAll is O(h log n); Holds
// is O(h log h); Ascend is O(n). Segments with several owners cost a factor
// of their owner count. BenchmarkConflicts compares a 10,000-range tree
// with a brute-force list.
//
// # Memory
//
// A held point range [k, k] costs one segment: a 48-byte struct with the
// key stored once (a range stores its start and end key in one string) and
// the first owner inline, plus its slot in the B-tree and in its owner's
// list. Memory() adds these up, rounding every allocation to the Go
// allocator's size class, and keeps the sum current as segments come and
// go; with 16-byte keys it comes to about 96 bytes per held point.
// TestMemoryAccounting checks it against runtime.MemStats.
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
