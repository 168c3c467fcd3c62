package cluster

import (
	"fmt"
	"strings"

	"github.com/txnlock/txnlock"
)

// DeadlockError is a deadlock across nodes: the victim's Lock call returns
// it (wrapped in a *txnlock.LockError). errors.Is(err, txnlock.ErrDeadlock)
// is true, and errors.As finds both it and the *txnlock.DeadlockError it
// carries.
type DeadlockError struct {
	*txnlock.DeadlockError
	// Nodes names, for each entry of Cycle, the node where it waits.
	Nodes []string
	// Epoch is the epoch of the elected detector that found the cycle.
	Epoch int64
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("%s across nodes %s", e.DeadlockError.Error(), strings.Join(e.Nodes, ", "))
}

// Unwrap returns the *txnlock.DeadlockError.
func (e *DeadlockError) Unwrap() error { return e.DeadlockError }

// Report renders the deadlock as txnlock.DeadlockError.Report does, with
// the node of each transaction's wait.
func (e *DeadlockError) Report() string {
	var sb strings.Builder
	sb.WriteString(e.DeadlockError.Report())
	for i, n := range e.Nodes {
		if i < len(e.Cycle) {
			fmt.Fprintf(&sb, "*** (%d) TRANSACTION %d WAITS ON NODE %s\n", i+1, uint64(e.Cycle[i].Txn), n)
		}
	}
	fmt.Fprintf(&sb, "*** DETECTOR EPOCH %d\n", e.Epoch)
	return sb.String()
}

// String is Report.
func (e *DeadlockError) String() string { return e.Report() }
