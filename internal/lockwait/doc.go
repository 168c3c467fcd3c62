// Package lockwait is the waiting machinery shared by pointlock and
// rangelock: the Waiter that a blocked request sleeps on, its FIFO Queue,
// and the one function, Waiter.Wait, that honours the context, the
// lock-wait timeout and the deadlock detector.
//
// A Waiter moves through three states, each change a compare-and-swap so
// that the manager (granting), the detector (choosing a victim) and the
// waiter itself (timeout, cancellation) can race safely:
//
//	         Claim, Wake (manager, under its lock)
//	waiting ───────────────────────────────▶ granted
//	   │
//	   │  Fail (detector victim, Close, timeout, ctx, Check)
//	   └───────────────────────────────────▶ failed
//
// Who removes a waiter from its queue:
//   - granted: the manager that granted it, in the same critical section,
//     between Claim and Wake;
//   - failed: the waiting goroutine itself, when Wait returns an error: it
//     takes the manager's lock, unlinks itself, and re-checks the queue
//     behind it exactly as a release does.
//
// The detector hears of a wait from the waiting goroutine alone: Wait
// reports it (WaitGraph.Block, after the detector's DetectDelay), checks it
// if Block asks, and removes it (WaitGraph.Unblock) before it returns, with
// no manager lock held. The manager tells the detector nothing: it gives
// the waiter a Source, through which the detector asks, whenever a search
// needs it, whom the wait waits for, and the Source answers under the
// manager's lock.
//
// A manager that grants claims the waiter first (Claim), records the grant
// where the waiter's next call will look for it (a per-transaction record
// under another mutex), and only then wakes it (Wake): a claimed waiter
// sleeps on until Wake, whatever its timer or context do.
//
// Until it is unlinked a failed waiter is still in the queue; managers skip
// waiters whose Claim fails. Claim wins a race with a timeout: a waiter
// claimed before its own Fail reports success.
//
// Waiters are recycled: New takes one from a pool and Release gives it
// back, so that a wait allocates nothing (a hot key with a thousand
// queued goroutines otherwise keeps the garbage collector busy, and every
// collection stalls the queue). A manager may Release a waiter once Wait
// has returned and the waiter is out of its queue, provided no one else
// can still touch it. Both managers do so: a granter touches the waiter no
// more after Wake, and the detector fails waiters only under its
// mutex, while their waits are in its graph (see the deadlock package).
package lockwait
