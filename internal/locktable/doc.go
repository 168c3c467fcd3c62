// Package locktable is the lock table core of both managers: the lock of
// one key — its holders and its FIFO queue of waiting requests — and
// every decision on it, as a pure state machine. pointlock is a thin shell
// around it; rangelock uses it for its point locks and adds its wide
// locks as what a key's requests also wait for.
//
// An owner (a manager's stripe) keeps its keys in a Table under its latch
// and asks the Lock what to do; the Lock answers with values and changes
// only its own state:
//
//	l, pos := tab.Find(h, key)
//	if l == nil {
//		l = tab.New(pos, h, key)
//	}
//	switch d, upgrade := l.Decide(txn, mode, false); d {
//	case locktable.Covered: // nothing to do
//	case locktable.Grant, locktable.GrantPast:
//		l.Grant(holds, mode, home) // holds: txn's Holds, under its latch
//		// GrantPast: once unlatched, tell the detector (Passed)
//	case locktable.Wait:
//		w := lockwait.New(txn, ref, now)
//		w.Upgrade = upgrade
//		l.Enqueue(w) // then unlatch, and w.Wait
//	}
//
//	// After a release (l.Release(txn)) or a failed wait (l.Leave(w)):
//	for w := range l.Grants(nil, false) {
//		if w.Claim() {
//			l.GrantWaiter(w, holdsOf(w.Txn()), home)
//			w.Wake()
//		}
//	}
//	if l.Empty() {
//		tab.Delete(h, l)
//	}
//
// There are no goroutines, latches, clock reads, channel operations or
// detector calls here: the owner does those around the calls (lockwait's
// Claim and Wake are the only waiter operations a grant needs, and the
// owner makes them). The package is tested on one goroutine: a model test
// checks every decision against a plain statement of the rules.
//
// # The rules
//
// A new request of T in mode m on a key:
//   - is Covered if T holds the key in m or a stronger mode: a lock is a
//     set, not a counter;
//   - is granted at once if it conflicts with no holder other than T and
//     either T holds the key already (an upgrade by the sole holder) or no
//     request of another transaction that conflicts with m is queued;
//   - waits otherwise: at the back of the queue, or, if T holds the key
//     Shared and asks Exclusive, as an upgrade, behind earlier upgrades and
//     ahead of every other request. An upgrade waits for the other holders
//     only: it never waits for a queued request that waits for T (the
//     root package's exception to FIFO).
//
// A queued request is granted as soon as no holder of another transaction
// conflicts with it and, unless it is an upgrade, no request of another
// transaction still queued ahead of it does. After a release or a failed
// wait, Grants finds those requests in queue order and stops as soon as
// no later one can be granted, so a release costs what it grants, not the
// queue's length; joining and leaving a queue are O(1). Whom a waiter
// waits for, the rule that Status and error reports print, is
// internal/waitsfor's (WaitsFor, Snapshot).
//
// # Memory
//
// A Lock is 48 bytes on 64-bit platforms: the key (16), a pointer to the
// part that only shared or contended keys need (8), and the first
// holder's place inline (24). A Holder is linked in the Lock and in its
// transaction's Holds (a slice of *Holder, so that removing one is O(1)).
// A Table keeps up to MaxFree emptied Locks with their key buffers, so
// locking a fresh key allocates nothing in the steady state.
package locktable
