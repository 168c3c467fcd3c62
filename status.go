package txnlock

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is a snapshot of a manager's lock table, like InnoDB's
// performance_schema.data_locks and data_lock_waits: every held lock and
// every waiting request. Locks and Waits are sorted by column family, then
// range start, then transaction.
type Status struct {
	Locks []LockStatus
	Waits []WaitStatus
}

// LockStatus is one held lock. Holders are sorted; a point manager reports
// the key as [k, k].
type LockStatus struct {
	CF      ColumnFamily
	Range   Range
	Mode    Mode // the strongest mode held
	Holders []TxnID
}

// WaitStatus is one waiting request: who waits for which lock, blocked by
// whom, since when.
//
// Blockers names whom the request waits for directly, sorted:
//   - if no conflicting request of another transaction is queued ahead of
//     it, the holders whose locks conflict with it;
//   - otherwise the nearest conflicting requests ahead: for an Exclusive
//     request the request directly ahead if it is Exclusive, or the whole
//     run of Shared requests directly ahead; for a Shared request the
//     nearest Exclusive request ahead;
//   - for a range, which can overlap several holders and queues: the
//     nearest conflicting requests on each part of it (a request ahead is
//     left out only if a listed request waits for it, directly or through
//     others), and also the conflicting holders that none of the listed
//     requests itself waits for;
//   - for an upgrade (Upgrade), the other holders only: an upgrade is
//     queued ahead of every other request.
//
// Everyone a request truly waits for is reachable through Blockers,
// transitively (each listed request has its own row), while a queue of N
// requests lists O(N) entries in all. Listing every conflicting pair, as
// InnoDB's data_lock_waits does, would be O(N²) on a hot key: a snapshot
// of a queue must cost what it reports. A deadlock detector keeps its own
// view and does not read Status.
type WaitStatus struct {
	Txn      TxnID
	CF       ColumnFamily
	Range    Range
	Mode     Mode
	Upgrade  bool    // the waiter holds the lock Shared and wants Exclusive
	Blockers []TxnID // whom it waits for directly (see above)
	Since    time.Time
}

// Sort orders Locks and Waits canonically (managers call it).
func (s *Status) Sort() {
	slices.SortFunc(s.Locks, func(a, b LockStatus) int {
		if a.CF != b.CF {
			return int(a.CF) - int(b.CF)
		}
		if c := a.Range.Start().Compare(b.Range.Start()); c != 0 {
			return c
		}
		return a.Range.End().Compare(b.Range.End())
	})
	slices.SortStableFunc(s.Waits, func(a, b WaitStatus) int {
		if a.CF != b.CF {
			return int(a.CF) - int(b.CF)
		}
		if c := a.Range.Start().Compare(b.Range.Start()); c != 0 {
			return c
		}
		return a.Since.Compare(b.Since)
	})
}

// String renders two tables, "locks" and "waits". Times are omitted so that
// the output of a scenario is deterministic; use the fields for them.
func (s Status) String() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "locks:\n")
	for _, l := range s.Locks {
		fmt.Fprintf(tw, "  %v\t%v\t%v\tholders=%v\n", l.CF, l.Range, l.Mode, txnList(l.Holders))
	}
	fmt.Fprintf(tw, "waits:\n")
	for _, w := range s.Waits {
		up := ""
		if w.Upgrade {
			up = " (upgrade)"
		}
		fmt.Fprintf(tw, "  %v\t%v\t%v\t%v%s\tblockers=%v\n", w.Txn, w.CF, w.Range, w.Mode, up, txnList(w.Blockers))
	}
	tw.Flush()
	return sb.String()
}

func txnList(ids []TxnID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(uint64(id))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Stats are a manager's counters since it was created. Fields a manager has
// no use for stay zero (a point manager never escalates).
type Stats struct {
	Acquired     uint64        // lock requests granted (re-locks of held locks included)
	Released     uint64        // locks released
	Waited       uint64        // requests that had to wait
	WaitTime     time.Duration // total time spent waiting, granted or not
	Timeouts     uint64        // requests that ended with ErrLockNotGranted: timeouts and NoWait refusals
	Deadlocks    uint64        // requests that ended with ErrDeadlock
	Canceled     uint64        // requests that ended with a context error
	LockLimit    uint64        // requests refused with ErrLockLimit
	CurrentLocks int64         // locks held now (a key with several holders counts once)
	Waiting      int64         // requests waiting now
	Escalations  uint64        // lock escalations (range manager)
	LockMemory   int64         // bytes of lock memory accounted now (range manager)
}

// Add adds o's counters to s (for summing stripes).
func (s *Stats) Add(o Stats) {
	s.Acquired += o.Acquired
	s.Released += o.Released
	s.Waited += o.Waited
	s.WaitTime += o.WaitTime
	s.Timeouts += o.Timeouts
	s.Deadlocks += o.Deadlocks
	s.Canceled += o.Canceled
	s.LockLimit += o.LockLimit
	s.CurrentLocks += o.CurrentLocks
	s.Waiting += o.Waiting
	s.Escalations += o.Escalations
	s.LockMemory += o.LockMemory
}

// String renders the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("acquired=%d released=%d waited=%d wait_time=%v timeouts=%d deadlocks=%d canceled=%d lock_limit=%d current_locks=%d waiting=%d escalations=%d lock_memory=%d",
		s.Acquired, s.Released, s.Waited, s.WaitTime, s.Timeouts, s.Deadlocks, s.Canceled, s.LockLimit, s.CurrentLocks, s.Waiting, s.Escalations, s.LockMemory)
}
