// Package contract is one suite of scenario traces that every txnlock lock
// manager runs: the behaviour a caller may rely on whichever manager it
// uses, written once. Only tests import it.
//
// A trace is a cockroachdb/datadriven file: a command, "----", and the
// output the command must print. Run walks a directory of traces (skipping
// the fuzz corpora in testdata/fuzz) and plays each file against a fresh
// Backend. The manager backend drives any txnlock.Manager: the package's
// test hands Run a constructor that builds the manager from a Config.
//
//	contract.Run(t, "../internal/contract/testdata/points", func(cfg contract.Config) (txnlock.Manager, error) {
//		m, err := New(Options{...from cfg...})
//		m.queued = cfg.Queued
//		return m, err
//	})
//
// The traces are sorted by who runs them: testdata/rules holds the rules
// of the lock table (who is granted, who waits, in what order, who is
// woken, whom each waiter waits for), which every manager and the lock
// table core itself (internal/locktable, through a synchronous backend on
// one goroutine) run; testdata/points the rest of what every manager does
// with single keys (bad input, column families, Close, deadlocks);
// testdata/ranges the traces of ranges (range managers only); and
// testdata/pointlock and testdata/rangelock the traces of one manager's
// own options and mechanics, in the same language.
//
// # Commands
//
//	new [timeout=D|nowait|forever] [stripes=N] [detector=deadlock|seam]
//	    [max-locks=N] [max-memory=N] [barrier=K|barrier=(K,K,...)] [collide]
//	lock name=R txn=T (key=K | range=RANGE) [mode=S|X|bad] [cf=C]
//	    [timeout=D|nowait|forever] [ctx=cancelled|nil]
//	unlock txn=T (key=K | range=RANGE) [cf=C]
//	release txn=T                 UnlockAll
//	cancel name=R                 cancel the context of a waiting request
//	advance D                     move the manual clock by D
//	timeout name=R                move the manual clock to R's deadline
//	status                        Status: locks, and whom each waiter waits for
//	stats [memory]                Stats (lock memory only if asked)
//	add-cf cf=C / drop-cf cf=C / close
//	detector                      the seam detector's log (detector=seam)
//
// new starts a manager on a manual clock (2026-01-01 00:00:00 UTC) with
// the given LockTimeout (default: the manager's), stripes (default 4, so
// that no figure depends on the machine), a deadlock detector (deadlock: the
// deadlock package's, searching on block, so that the requester of a cycle
// is its victim; seam: SeamDetector, which records the seam's calls), and
// the options of one manager: max-locks (pointlock's MaxLocks), max-memory
// (rangelock's MaxLockMemory), barrier (a rangelock EscalationBarrier at
// each key K: nothing before K merges with K or anything after it) and
// collide (pointlock keys collide in its hash table). A manager that does
// not have an option fails the trace.
//
// A lock that finishes at once prints "R: granted" or "R: error: ..."
// (the error's full text). One that waits prints "R: waiting for [T ...]":
// the Blockers of its WaitStatus. After every command, each waiting
// request that finished because of it prints its outcome, in the order
// the requests were made. A mode other than S or X (bad) and a missing
// mode are invalid modes; ctx=cancelled passes a context cancelled
// already, ctx=nil a nil one. A transaction waits for one request at a
// time.
//
// RANGE is [a,b], [a,b), (a,b), [k], prefix:p, or invalid (the zero
// Range); a bound may be -inf or +inf. A range that excludes its start
// and includes its end is written ]a,b] (and ]a,b) works too): datadriven
// reads a value that starts with "(" as a list up to ")", so "(a,b]"
// cannot be written.
//
// # How waiting is observed
//
// Nothing in the suite sleeps, polls or reads the wall clock. The manager
// backend runs each Lock on its own goroutine and learns that it waits
// from the manager's queued hook (Config.Queued), then from the detector
// that the wait was reported and checked, then from the clock that its
// timeout is armed; only then does it print "waiting". A waiting request
// is awaited (a blocking receive) only when it must finish: when Status,
// taken after a call returned, no longer shows it (managers grant before
// Unlock returns, and a failed waiter leaves Status at once), when its
// deadline passed on the manual clock, or when its context was
// cancelled; the backend repeats this until nothing more finishes.
package contract
