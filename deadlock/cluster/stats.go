package cluster

import (
	"fmt"

	"github.com/txnlock/txnlock/deadlock"
)

// Stats are a node's counters: its own detector's, its link to etcd and
// to the elected detector, what it exported, and, while it is the
// elected detector, what it found.
type Stats struct {
	Local deadlock.Stats
	// Registered: the node holds a live etcd session and is registered.
	// False while etcd has no quorum or cannot be reached: local
	// detection goes on, cross-node waits end by their timeouts.
	Registered bool
	// SessionsLost counts the etcd sessions the node lost (lease expired
	// or etcd unreachable).
	SessionsLost uint64
	// Leader: the node is the elected detector now, of epoch Epoch.
	Leader bool
	// Epoch is the epoch of the elected detector the node streams to (the
	// election's revision), 0 if none.
	Epoch int64
	// Connected: the node's stream to the elected detector is up.
	Connected bool
	// Exported is the waits the node exports now; Dropped counts those
	// past Options.MaxExport left out of an export.
	Exported int
	Dropped  uint64
	// Snapshots and Deltas count the messages the node sent.
	Snapshots, Deltas uint64
	// Stale counts messages refused for their epoch.
	Stale uint64
	// Victims counts the node's waits failed as victims of cross-node
	// deadlocks.
	Victims uint64
	// As the elected detector: cycles found across nodes, confirmed (and
	// broken), and found but not confirmed by the nodes' live lock tables.
	Cycles, Confirmed, FalseCandidatesAvoided uint64
}

// String renders the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("registered=%t sessions_lost=%d leader=%t epoch=%d connected=%t exported=%d dropped=%d snapshots=%d deltas=%d stale=%d victims=%d cycles=%d confirmed=%d false_candidates_avoided=%d local={%v}",
		s.Registered, s.SessionsLost, s.Leader, s.Epoch, s.Connected, s.Exported, s.Dropped, s.Snapshots, s.Deltas, s.Stale, s.Victims,
		s.Cycles, s.Confirmed, s.FalseCandidatesAvoided, s.Local)
}
