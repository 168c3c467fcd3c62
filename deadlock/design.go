// How the detector works. The package doc tells what it does for a user;
// this is how.
//
// # The detector asks
//
// Managers tell the detector nothing when they grant, release or queue.
// A waiter's own goroutine reports its wait (Block), with the holders it
// was queued behind, and takes it back (Unblock) when the wait ends; in
// between, a search that reaches the waiting transaction asks the waiter
// whom it waits for (detect.Waiter.Blockers), and its manager answers
// from its live lock table under its own latch. Block asks too, but only
// if the lock was granted since the wait was queued
// (detect.Waiter.Regranted): a grant can hand the lock to a transaction
// that has already reported a wait of its own, and one of the two Blocks
// must see the other. The reported waits are
// kept in a table of slots hashed by transaction, each with its own small
// mutex (registry.go), so a hot lock's waits never meet on one mutex.
//
//	waiter's goroutine                 Detector
//	  queued (manager latch released)
//	  Block(wait, queued behind H) ──▶  slot(T): record the wait
//	                                    (granted since? ask the manager)
//	                                    slot(H): does H wait? no: done
//	                                    (and forget H's ended waits)
//	  sleeps ... granted
//	  Unblock(wait) ─────────────────▶  slot(T): forget it, unless the
//	                                    Block of a waiter behind T did
//
// The usual holder of a hot lock was granted it a moment ago, and the
// next waiter's Block finds that ended wait in the holder's slot: it
// forgets it there, so the holder's Unblock finds the slot empty and
// takes no mutex.
//
// # The graph, contracted
//
// A search visits transactions. Following a wait of T means visiting the
// blockers of the lock T waits for: its holders, and for a range whatever
// else keeps that waiter (a conflicting range lock, a range waiter queued
// ahead). Waiters queued on the same lock are not listed: each of them
// waits, directly or through the ones ahead of it, for the same holders,
// so a path through them leads where the holders lead. So a search from
// the newest of 10,000 waiters on a hot lock visits the holder and what
// the holder waits for, never the queue, and a search is linear in the
// part of the graph it reaches: each transaction is expanded once.
//
// # Confirming a cycle
//
// The contraction draws an edge from a waiter to the lock's holders even
// where the waiter truly waits for a request ahead of it, and a search
// reads the lock tables one latch at a time while they change. So a cycle
// a search finds is a candidate: each edge is read again, exactly
// (detect.Waiter.WaitsFor: whom the wait waits for directly, as its lock
// will stand once the waits that already ended have left it), following
// the requests in between through their own waits, and every member must
// still wait after the last edge was read. The confirmed cycle, with those
// requests in it, is what is reported; a candidate that fails is counted
// (Stats.FalsePositivesAvoided), its edge is dropped and the search goes
// on. The shortest false candidate: a Shared waiter behind an Exclusive
// request that just failed, on a key held Shared, looks blocked by the
// holders, but is granted as soon as the failed request leaves
// (TestTruthFailedWaiterAhead).
//
// # When a cycle closes
//
// Every event that adds an edge to the waits-for graph, and the search
// that finds a cycle it closes:
//   - a new wait: its Block finds a blocker that waits, and its Check
//     searches from it;
//   - a wait queued ahead of others (an upgrade, which never waits for
//     the queue): the others now wait for the upgrader, whose own Check
//     searches from it;
//   - a grant to a transaction that waits elsewhere too (two Lock calls in
//     flight): the lock's other waiters now wait for it; its granted
//     wait's Unblock searches from its other waits;
//   - a request granted at once past queued requests that conflict with it
//     (an upgrade, or a holder's request that skips requests of idle
//     transactions): they now wait for its transaction, and if that one
//     waits elsewhere (two Lock calls in flight) the manager's Passed
//     searches from its waits;
//   - a request leaving a queue: the waiters behind it wait for what it
//     waited for. Where their answers were the lock's holders (the
//     contraction), those edges were there already; a point lock's exact
//     edges count the leaving request as gone already (the lock as it
//     will stand), so the search that found the contracted cycle
//     confirmed it. Where an answer named the leaving request (a range
//     manager's nearest requests), the waiter has new edges, and the
//     manager asks for a search from it (detect.Graph.Recheck) once
//     the request is unlinked: a victim chosen for one cycle may leave
//     another standing behind it;
//
// Nothing else adds an edge. A holder's range that widens (rangelock's
// escalation, or a range lock merged with its neighbours) covers only keys
// that no other transaction holds or waits for, so no waiter gains a
// blocker; a release, a failed wait and a grant to a transaction that
// waits nowhere else only take edges away, or point them at a running
// transaction, which is on no cycle until it waits (a new wait).
//
// A wait whose Block finds no waiting blocker can be on no cycle yet:
// one can only close later, by one of these events, whose search sees the
// earlier wait. So the usual wait, a queue behind running holders, costs
// one Block and one Unblock and no search.
//
// # A wait nobody waits for
//
// A new wait closes a cycle only if someone waits for its transaction:
// for a lock it holds, or for a request of it queued ahead of theirs. So
// Block asks for no search, even when a blocker waits, if the wait is
// lone and its transaction T holds no lock in any manager attached
// (LocksHeld, asked once the wait is recorded). Lone means: no other wait
// of T is reported, the request was queued behind every request queued
// before it (detect.Edge.MaySkip unset: no upgrade, no request of a holder),
// and no wait has been stamped after it, so no request stands behind it
// yet. Whatever comes to wait for T later is one of the events above: a
// wait queued behind T's request, or for a lock T gains, reports after
// T's wait is recorded, and its Block sees T waiting and searches. One
// case is left, a transaction with two Lock calls in flight whose first
// request has someone queued behind it but has not reported yet when the
// second's lone wait is recorded: so a wait whose transaction has a lone
// wait reported searches from every wait of its transaction in its
// Block. This is what keeps a contended load's searches few: a
// transaction's first request behind a chain of waits, the commonest wait
// there, is on no cycle and costs no search.
//
// # Which request closed a cycle
//
// Every wait carries a stamp (detect.Graph.Stamp) that its manager
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
// The victim is failed at once, under the detector's mutex, so no other
// search breaks the same cycle twice; its goroutine's Unblock comes later.
// When the victim is another transaction the search runs again from the
// requester, which may have closed several cycles at once (it waits for a
// lock with several holders) and is about to sleep.
//
// # The circuit breaker
//
// An on-block search runs under the detector's mutex, so its cost is
// bounded: MaxDepth transactions on the path (200), MaxSteps edges
// followed (1,000,000) and MaxSearchTime (1ms, read from the injected
// clock every 1024 steps). A path that reaches MaxDepth is not followed
// further, and the search goes on along the others; a search that found
// no cycle after that, or that hits the steps or time limit, is a trip
// (counted). InnoDB and RocksDB then assume a deadlock and roll the
// requester back; here that is Breaker AssumeDeadlock. The default, Defer,
// lets the requester sleep and wakes the background pass, which searches
// without limits: a real cycle is still broken a moment later, and a long
// chain without a cycle is never reported.
//
// # The background pass
//
// A goroutine (started by New unless Detection is Off; stopped by Close)
// runs a pass when a search was deferred or not confirmed, on every Check
// with Detection Background, and every BackgroundInterval. A pass reads
// every reported wait and its blockers, slot by slot, without the
// detector's mutex, searches that snapshot (a depth-first forest,
// iterative and linear), and confirms each cycle it finds against the
// lock tables, under the mutex, before it fails a victim. After a pass the
// goroutine rests ten times as long as the pass took, so a busy graph
// where every wait wakes it spends at most about a tenth of a processor on
// passes.
//
// # Stale waits
//
// A manager grants a waiter, which wakes and then Unblocks its own wait;
// the woken transaction may already be running, even releasing what it
// held, and a fast grant may even come before the waiter's Block. A
// search does not follow a wait whose waiter says it no longer waits
// (detect.Waiter.Active), Block does not record one, a manager answers
// that such a wait waits no more, and every member of a cycle is checked
// again just before it is broken, so a transaction that is running again
// is never reported as deadlocked.
//
// # Structure
//
// graph.go and search.go are a view of the graph and its one search: no
// lock, no goroutine, time only from an injected clock; a view reads the
// waits through a source, the registry in a Detector and a plain map in
// tests. core.go makes the decisions (confirmation, victim, report,
// history, counters) and returns them as values: it fails no waiter.
// Detector (detector.go) wraps the core with one mutex, fails the victims
// the core chose under it, and runs the callbacks after it; its
// background goroutine is the third layer.
//
// Lock order: Detector.passMu, then Detector.mu, then one registry slot's
// mutex, then a manager's latch (inside the waiter's answers). A manager
// never calls the detector with a latch held, but for Stamp (an atomic
// add). Waiter.Fail, which takes no lock, runs under mu and the victim's
// slot mutex, while the wait is still reported, so the waiter cannot have
// been recycled (lockwait.Waiter.Release). OnDeadlock runs with every lock
// released.

package deadlock
