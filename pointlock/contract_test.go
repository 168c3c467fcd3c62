package pointlock

import (
	"errors"
	"testing"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
)

// TestContract plays the traces every manager runs, then pointlock's own.
func TestContract(t *testing.T) {
	for _, dir := range []string{"rules", "points", "pointlock"} {
		t.Run(dir, func(t *testing.T) {
			contract.Run(t, "../internal/contract/testdata/"+dir, newContractManager)
		})
	}
}

// newContractManager builds a Manager as a trace's "new" asks.
func newContractManager(cfg contract.Config) (txnlock.Manager, error) {
	if cfg.MaxLockMemory != 0 || cfg.EscalationBarriers != nil {
		return nil, errors.New("pointlock has no MaxLockMemory and no escalation")
	}
	opts := Options{Stripes: cfg.Stripes, MaxLocks: cfg.MaxLocks}
	opts.LockTimeout, opts.Detector, opts.Clock = cfg.LockTimeout, cfg.Detector, cfg.Clock
	m, err := New(opts)
	if err != nil {
		return nil, err
	}
	if cfg.CollideHashes {
		m.hashMask = 3 // every key shares its hash with a quarter of the others
	}
	m.queued = cfg.Queued
	return checked{m}, nil
}

// checked is a Manager whose invariants the contract harness checks after
// every command.
type checked struct{ *Manager }

func (c checked) CheckInvariants() error { return c.checkInvariants() }
