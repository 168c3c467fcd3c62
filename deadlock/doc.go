// Package deadlock finds deadlocks among transactions waiting in txnlock
// lock managers. A Detector implements the txnlock.Detector seam; give the
// same Detector to every manager (point and range, every column family) and
// they share one waits-for graph, so a cycle that crosses managers or
// column families is found. There are no package-level globals.
//
//	det, _ := deadlock.New(deadlock.Options{}) // zero Options: the defaults
//	defer det.Close()                          // after the managers
//	wo := txnlock.WaitOptions{Detector: det}
//	points, _ := pointlock.New(pointlock.Options{WaitOptions: wo})
//	ranges, _ := rangelock.New(rangelock.Options{WaitOptions: wo})
//	...
//	err := points.Lock(ctx, req) // a *txnlock.DeadlockError if req's transaction is a victim
//	for _, d := range det.History() {
//		fmt.Print(d.Report()) // InnoDB's LATEST DETECTED DEADLOCK, for each recent one
//	}
//
// It finds every real cycle and bounds what looking costs. At the default
// settings it reports no deadlock that is not there, but for one moment:
// a waiter queued behind a request whose wait has just ended in failure
// (a victim, a timeout, a cancellation), before that request has left its
// queue, still counts as waiting for the lock's holders, so a cycle
// through it can be reported then although the waiter is about to be
// granted (TestTruthFailedWaiterAhead shows the shortest case).
//
// # The graph
//
// Two kinds of node: transactions and resources (a lock with waiters). A
// waiting transaction points at the resource it waits for; a resource
// points at the transactions that block it (SetBlockers: its holders).
//
//	 txn 7 ──┐
//	 txn 8 ──┤  (queued, X)               ┌──▶ txn 2 ──▶ res b ──▶ txn 3 ...
//	 txn 9 ──┼──▶ res a (key "k", cf 1) ──┤
//	   ...   │                            └──▶ txn 4   (holders, S)
//	txn 10k ─┘
//
// # Why a queue of N waiters does not make a search walk N nodes
//
// In a FIFO queue txn 9 also waits for txns 7 and 8 ahead of it. Drawing
// those edges would make a search from a new waiter walk the whole queue,
// and a search from each of N waiters walk O(N) nodes: O(N²) for the queue,
// and InnoDB's "TOO DEEP OR LONG SEARCH" on a hot AUTO-INC lock. But the
// waiters ahead wait for nothing but the same holders (a waiter waits in
// one place), so every path through them leads to the holders anyway: the
// resource node contracts the queue, and waiter → lock → holders is exact.
// A search from txn 10k visits res a and its holders, and never a queued
// waiter unless that waiter also holds something on the path. A cycle
// through a queued waiter still shows, contracted: without that waiter,
// which is as stuck as the rest. The search marks the resource once it has
// followed its blockers, so N waiters reached through other paths still
// expand it once. (A transaction that waits in two places at once breaks
// the premise: a cycle that needs the edge from a later waiter to such a
// transaction queued ahead of it is not seen, and ends by lock timeout.)
//
// A transaction never blocks itself: following a resource reached from
// txn T's wait skips T among its blockers (an upgrading holder is listed
// among the holders of the lock it waits for, so two Shared holders that
// both upgrade form the cycle 1 → k → 2 → k → 1). Such a "resource without
// T" view is private to T, which a search visits once, so it needs no
// mark. Each node is expanded at most once per search: a search is linear
// in the part of the graph reachable from its start.
//
// # The life of a Check (Detection OnBlock, the default)
//
//	manager (its lock held)         waiter (no manager lock), Waiter.Wait
//	  queue the waiter,               (sleep DetectDelay first, if set)
//	  NewResource, SetBlockers  ────▶ Block(waiter → res)
//	                                    slot: w's txn blocks nothing? park
//	                                          it; sleep, unpark once woken
//	                                    mu: record the wait; does a blocker
//	                                        of res itself wait?
//	                                    no: sleep, Unblock once woken
//	                                    yes: Check(w)
//	                                      │ mu: depth-first search from w's wait
//	                                      │     back to w's transaction
//	         ┌────────────────────────────┼───────────────────┐
//	         ▼ cycle                      ▼ none              ▼ a limit tripped
//	  choose the victim, drop its     sleep            Defer: sleep, wake the
//	  wait, record the history                         background pass
//	  (requester: Check returns the                    AssumeDeadlock: Check
//	   *DeadlockError; another txn:                    returns a DeadlockError
//	   Waiter.Fail, under mu)                          with LimitExceeded
//	         │
//	         ▼ OnDeadlock(err), after mu
//
// Block answers whether the wait needs a Check at all (a parked wait never
// does). If no blocker of the resource is waiting, no cycle runs through
// the new wait: one can
// only form later, when some edge is added after it, and the search that
// edge triggers (its own Check, or a suspect's search) sees the earlier
// wait. So a queue behind running holders, the common wait, costs one
// Block and one Unblock, both from the waiter's goroutine, outside the
// manager's critical sections, and no search.
//
// # Waits no search can reach (dormant.go)
//
// A search enters a transaction only through a resource that the
// transaction blocks. The wait of a transaction that blocks nothing, the
// usual wait on a hot lock (a transaction that holds nothing else queues
// behind the holder), can be on no cycle, so Block parks it in a table of
// slots hashed by transaction, each with its own small mutex, and returns
// at once; Unblock takes it out again. Neither takes the detector's mutex
// or touches the graph. Each slot counts the blockers of the live graph
// that hash to it, and a wait is parked only while its slot counts none.
// When SetBlockers makes a transaction a blocker, its parked waits that
// are still active move into the graph, under the detector's mutex and
// the slot's, so no search ever misses a wait it could reach. A promoted
// wait keeps its stamp (below).
//
// # Which request closed a cycle
//
// Every wait carries a stamp (txnlock.Detector.Stamp) that its manager
// takes inside the critical section that queues it, so stamps order waits
// as the managers queued them. The request that closed a cycle is, in
// terms a caller can observe, the member whose Lock call began waiting
// last: the newest stamp of the cycle, whichever member's search found
// the cycle. The two differ when a waiter's goroutine reports late: T1
// and T2 are queued (Status shows them), T3's request closes T1 → T2 →
// T3 → T1, but T1's report reaches the detector after T3's own search
// (which then found no cycle); T1's search finds it, and VictimRequester
// still fails T3.
//
// The victim's wait is removed from the graph at once, so no other search
// breaks the same cycle twice; its goroutine's later Unblock is a no-op.
// When the victim is another transaction the search runs again from the
// requester, which may have closed several cycles at once (it waits for a
// lock with several holders) and is about to sleep.
//
// # The circuit breaker
//
// An on-block search runs under the detector's mutex, which every manager
// takes to report waits, so its cost is bounded: MaxDepth transactions on
// the path (200), MaxSteps edges followed (1,000,000) and MaxSearchTime
// (1ms, read from the injected clock every 1024 steps). A search that hits
// a limit is a trip (counted). InnoDB and RocksDB then assume a deadlock
// and roll the requester back; here that is Breaker AssumeDeadlock. The
// default, Defer, lets the requester sleep and wakes the background pass,
// which searches a snapshot without limits: a real cycle is still broken a
// moment later, and a long chain without a cycle is never reported.
//
// # The background pass
//
// A goroutine (started by New unless Detection is Off; stopped by Close) runs a
// pass when a search was deferred, on every Check with Detection Background, and
// every BackgroundInterval. A pass copies the graph under the mutex, then
// searches the copy with the mutex released: a depth-first forest over
// every waiting transaction, iterative and linear. Each cycle found is
// re-checked against the live graph under the mutex (every wait still
// there, every next member still a blocker) before its victim is failed;
// a cycle that went away meanwhile is counted as a false positive avoided.
// Under the mutex a pass only copies the waits into a flat slice; it
// builds its graph from them outside. After a pass the goroutine rests ten
// times as long as the pass took, so a busy graph where every wait wakes
// it spends at most about a tenth of a processor on passes.
// # Stale waits
//
// A manager grants a waiter, which wakes and then Unblocks its own wait;
// the woken transaction may already be running, even releasing what it
// held, and a fast grant may even come before the waiter's Block. A
// search does not follow a wait whose waiter says it no longer waits
// (txnlock.Waiter.Active), Block does
// not record one, and every member of a cycle is checked again just
// before it is broken, so a transaction that is running again is never
// reported as deadlocked.
//
// # Cycles that no Check sees
//
// A cycle can form without a new wait: SetBlockers makes a transaction
// that is itself waiting a blocker of a lock that others wait for. It
// happens when a manager grants a lock and sets the lock's new blockers a
// moment after the grantee's goroutine has already blocked elsewhere and
// been checked against the old ones, or when a transaction that waits in
// two places at once is granted one of them. SetBlockers notes such a
// transaction as a suspect and wakes the background goroutine, which
// first searches from each suspect (on the live graph, within the limits),
// before any full pass. The periodic full pass is the last safety net.
//
// # Structure
//
// graph.go and search.go are a plain graph and its one search: no lock,
// no goroutine, time only from an injected clock. core.go makes the
// decisions (victim, report, history, counters) and returns them. Detector
// (detector.go) wraps the core with one mutex, fails the victims before
// it releases it and runs the callbacks after; its background goroutine is
// the third layer.
//
// Lock order: a manager's locks, then Detector.mu, then one dormant slot's
// mutex (park and unpark take a slot's mutex alone). The detector never
// calls into a manager. Waiter.Fail (which takes no lock) runs under mu,
// while the victim's wait is known to be live: a waiter that finished its
// Wait may be recycled for another (lockwait.Waiter.Release). OnDeadlock
// runs after mu is released.
package deadlock
