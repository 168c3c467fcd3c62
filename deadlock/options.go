package deadlock

import (
	"fmt"
	"strings"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/optcheck"
)

// Detection says when the detector looks for cycles.
type Detection uint8

const (
	// OnBlock searches from every new waiter before it sleeps, on the live
	// graph, within the breaker's limits. Cycles are found at once and the
	// requester learns of its own deadlock without ever sleeping.
	OnBlock Detection = iota
	// Background leaves new waiters alone and lets a goroutine search a
	// snapshot of the graph, woken by new waits and every
	// BackgroundInterval. Cheapest on the blocking path; deadlocks live a
	// little longer.
	Background
	// Off records nothing and finds nothing: waits end by their timeout.
	Off
)

func (m Detection) String() string {
	switch m {
	case OnBlock:
		return "on-block"
	case Background:
		return "background"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Detection(%d)", uint8(m))
}

// Breaker says what an on-block search that hits a limit decides.
type Breaker uint8

const (
	// Defer lets the requester sleep and hands the search to the
	// background goroutine, which searches a snapshot without limits. A
	// real cycle is still broken; a long chain without one is never
	// reported.
	Defer Breaker = iota
	// AssumeDeadlock fails the requester with a *txnlock.DeadlockError
	// whose LimitExceeded is set, as InnoDB and RocksDB do.
	AssumeDeadlock
)

func (b Breaker) String() string {
	switch b {
	case Defer:
		return "defer"
	case AssumeDeadlock:
		return "assume-deadlock"
	}
	return fmt.Sprintf("Breaker(%d)", uint8(b))
}

// Victim says which transaction of a cycle is failed.
//
// Under heavy contention, where most waits close a cycle, the choice
// decides whether anything finishes. VictimRequester fails a transaction
// however many locks it holds, so one that needs many locks may fail on
// every try: with 2,000 transactions of five ranges each on 500 keys
// (BENCHMARKS.md, section 7), none commits once the queues have filled.
// VictimYoungest without a Priority never fails the oldest transaction
// of a cycle, and VictimFewestLocks spares the one that holds the most:
// the transactions furthest along are not the ones failed, and there
// pointlock goes on committing.
type Victim uint8

const (
	// VictimRequester fails the transaction whose wait closed the cycle:
	// the member whose Lock call began waiting last, whichever member's
	// search found the cycle.
	VictimRequester Victim = iota
	// VictimYoungest fails the youngest transaction: the lowest Priority
	// if Options.Priority is set, then the highest TxnID.
	VictimYoungest
	// VictimFewestLocks fails the transaction that held the fewest locks
	// when the deadlock was found, in every manager attached to the
	// detector (detect.LockCounter), then the youngest.
	VictimFewestLocks
	// VictimPriority fails the transaction with the lowest
	// Options.Priority, then the one that closed the cycle.
	VictimPriority
)

func (v Victim) String() string {
	switch v {
	case VictimRequester:
		return "requester"
	case VictimYoungest:
		return "youngest"
	case VictimFewestLocks:
		return "fewest-locks"
	case VictimPriority:
		return "priority"
	}
	return fmt.Sprintf("Victim(%d)", uint8(v))
}

// Defaults. InnoDB's limits (depth 200, 1,000,000 steps) bound the search
// by size; DefaultMaxSearchTime bounds it by time too, because an on-block
// search holds the detector's mutex, which every other search and every
// Unblock that searches take, and asks the managers under their latches:
// 1ms is longer than any honest search (a search visits only the
// transactions reachable through holders, well under a microsecond each,
// so a millisecond is thousands of them) yet short enough that a
// pathological graph cannot stall a hot lock behind it. A search cut short
// is deferred, not lost (Breaker Defer).
const (
	DefaultMaxDepth           = 200
	DefaultMaxSteps           = 1_000_000
	DefaultMaxSearchTime      = time.Millisecond
	DefaultHistorySize        = 16
	DefaultBackgroundInterval = time.Second
)

// timeCheckEvery is how many search steps pass between two looks at the
// clock: reading a clock costs more than a step.
const timeCheckEvery = 1024

// Options configure a Detector. The zero Options are the defaults.
type Options struct {
	// Detection says when cycles are searched. Default: OnBlock.
	Detection Detection
	// MaxDepth bounds the length of the path an on-block search follows,
	// in transactions: a longer one is cut there, and the search trips if
	// it then finds no cycle. Default: DefaultMaxDepth (200).
	MaxDepth int
	// MaxSteps bounds the edges an on-block search follows. Default:
	// DefaultMaxSteps (1,000,000).
	MaxSteps int
	// MaxSearchTime bounds the time of an on-block search, read from Clock
	// every 1024 steps. Default: DefaultMaxSearchTime (1ms).
	MaxSearchTime time.Duration
	// Breaker decides what a search that hits a limit does. Default: Defer.
	Breaker Breaker
	// Victim chooses which transaction of a cycle fails. Default:
	// VictimRequester.
	Victim Victim
	// Priority ranks transactions for VictimYoungest and VictimPriority:
	// the lowest value is failed first. It is called with the detector's
	// mutex held and must be quick and must not call the detector.
	// Default: nil (every transaction ranks the same).
	Priority func(txnlock.TxnID) int64
	// HistorySize is how many recent deadlocks History keeps. Default:
	// DefaultHistorySize (16).
	HistorySize int
	// OnDeadlock, if set, sees every deadlock (and every assumed one),
	// outside the detector's mutex, after the victim was failed; for
	// logging. It must not keep the error's slices. Default: nil.
	OnDeadlock func(*txnlock.DeadlockError)
	// DetectDelay is how long a wait lasts before its waiter reports it to
	// the detector (and is checked, if its Block says so), so that short
	// waits cost the detector nothing at all (CockroachDB waits first
	// too). A cycle is then found at most about DetectDelay after it
	// closed: the last of its waits to be reported closes it in the graph.
	// Default: 0 (report and check at once, as InnoDB and RocksDB do).
	DetectDelay time.Duration
	// BackgroundInterval is the period of the background pass, which
	// searches the whole graph, with OnBlock detection too (a safety net
	// behind the searches each new wait starts).
	// Default: DefaultBackgroundInterval (1s).
	BackgroundInterval time.Duration
	// Clock times searches and stamps reports. Default: txnlock.SystemClock.
	Clock txnlock.Clock
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxSearchTime == 0 {
		o.MaxSearchTime = DefaultMaxSearchTime
	}
	if o.HistorySize == 0 {
		o.HistorySize = DefaultHistorySize
	}
	if o.BackgroundInterval == 0 {
		o.BackgroundInterval = DefaultBackgroundInterval
	}
	if o.Clock == nil {
		o.Clock = txnlock.SystemClock{}
	}
}

// Validate reports every problem at once. Zero fields are valid: they
// mean the defaults that EnsureDefaults fills in.
func (o *Options) Validate() error {
	var p optcheck.Problems
	if o.Detection > Off {
		p.Addf("unknown Detection %v", o.Detection)
	}
	if o.MaxDepth < 0 {
		p.Addf("MaxDepth %d is negative", o.MaxDepth)
	}
	if o.MaxSteps < 0 {
		p.Addf("MaxSteps %d is negative", o.MaxSteps)
	}
	if o.MaxSearchTime < 0 {
		p.Addf("MaxSearchTime %v is negative", o.MaxSearchTime)
	}
	if o.Breaker > AssumeDeadlock {
		p.Addf("unknown Breaker %v", o.Breaker)
	}
	if o.Victim > VictimPriority {
		p.Addf("unknown Victim %v", o.Victim)
	}
	if o.Victim == VictimPriority && o.Priority == nil {
		p.Addf("Victim %v needs a Priority function", o.Victim)
	}
	if o.HistorySize < 0 {
		p.Addf("HistorySize %d is negative", o.HistorySize)
	}
	if o.DetectDelay < 0 {
		p.Addf("DetectDelay %v is negative", o.DetectDelay)
	}
	if o.BackgroundInterval < 0 {
		p.Addf("BackgroundInterval %v is negative", o.BackgroundInterval)
	}
	return p.Err()
}

// String renders the options on one line.
func (o Options) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "detection=%v max_depth=%d max_steps=%d max_search_time=%v breaker=%v victim=%v",
		o.Detection, o.MaxDepth, o.MaxSteps, o.MaxSearchTime, o.Breaker, o.Victim)
	fmt.Fprintf(&sb, " priority=%t history_size=%d on_deadlock=%t detect_delay=%v background_interval=%v",
		o.Priority != nil, o.HistorySize, o.OnDeadlock != nil, o.DetectDelay, o.BackgroundInterval)
	return sb.String()
}
