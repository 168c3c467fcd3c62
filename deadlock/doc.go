// Package deadlock finds deadlocks among transactions waiting in txnlock
// lock managers and breaks each by failing one waiter, its victim, with a
// *txnlock.DeadlockError. Give the same Detector to every manager (point
// and range, every column family) and they share one waits-for graph, so
// a cycle that crosses managers or column families is found.
//
//	det, _ := deadlock.New(deadlock.Options{}) // zero Options: the defaults
//	defer det.Close()                          // after the managers
//	wo := txnlock.WaitOptions{Detector: det}
//	points, _ := pointlock.New(pointlock.Options{WaitOptions: wo})
//	ranges, _ := rangelock.New(rangelock.Options{WaitOptions: wo})
//	...
//	err := points.Lock(ctx, req)
//	if errors.Is(err, txnlock.ErrDeadlock) {
//		// req's transaction is the victim: roll it back (UnlockAll) and retry
//	}
//	for _, d := range det.History() {
//		fmt.Print(d.Report()) // as InnoDB's LATEST DETECTED DEADLOCK section
//	}
//
// # Guarantees
//
// Every cycle of waits is broken: by the search its last wait starts
// (Detection OnBlock, the default), or by the background pass, which runs
// every Options.BackgroundInterval and whenever a search was cut short.
// No deadlock is reported that is not there: a cycle a search finds is
// read again against the managers' lock tables, and only a cycle whose
// every member still waits is broken (the others are counted in
// Stats.FalsePositivesAvoided). One victim per cycle; the others go on
// waiting.
//
// # Choosing the victim
//
// Options.Victim picks it: the transaction whose request closed the cycle
// (VictimRequester, the default, as in InnoDB and RocksDB), the youngest,
// the one holding the fewest locks in every manager, or the lowest
// Options.Priority. The victim's Lock call returns an error that
// errors.Is ErrDeadlock; errors.As gives the *txnlock.DeadlockError with
// the cycle: each member's transaction, the lock it waits for, whom it
// waits for, how many locks it holds, and since when it waits. The victim
// holds its other locks until the caller releases them: roll the
// transaction back, then retry.
//
// # Costs
//
// A wait that cannot be on a cycle costs no search: a queue behind
// running holders, the usual wait, costs the detector two map updates.
// Options.DetectDelay lets short waits cost nothing at all, as
// CockroachDB's detector does. A search follows each transaction once,
// and waiters queued on one lock count as one step, so a search from the
// newest of 10,000 waiters on a hot key visits the holder, not the queue.
// Searches are bounded (Options.MaxDepth, MaxSteps, MaxSearchTime): past a
// bound, InnoDB and RocksDB assume a deadlock and fail the requester;
// here the default Breaker, Defer, lets the requester wait and hands the
// search to the background pass, which has no bound, so a long chain of
// waits is never reported as a deadlock.
//
// # Observing
//
// Stats counts searches, steps, deadlocks and trips of the bounds;
// History keeps the most recent deadlocks (Options.HistorySize), each
// numbered, the newest marked Latest; Options.OnDeadlock sees each as it
// is broken. Close stops the background pass; close the managers first.
package deadlock
