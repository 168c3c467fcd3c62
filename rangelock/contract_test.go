package rangelock

import (
	"errors"
	"testing"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
)

// TestContract plays the traces every manager runs, the range traces, then
// rangelock's own.
func TestContract(t *testing.T) {
	for _, dir := range []string{"rules", "points", "ranges", "rangelock"} {
		t.Run(dir, func(t *testing.T) {
			contract.Run(t, "../internal/contract/testdata/"+dir, newContractManager)
		})
	}
}

// newContractManager builds a Manager as a trace's "new" asks, with the
// same stripe of each key in every run (memory figures depend on it).
func newContractManager(cfg contract.Config) (txnlock.Manager, error) {
	if cfg.MaxLocks != 0 || cfg.CollideHashes {
		return nil, errors.New("rangelock has no MaxLocks and no hash-collision switch")
	}
	opts := Options{Stripes: cfg.Stripes, MaxLockMemory: cfg.MaxLockMemory, fixedHash: true}
	opts.LockTimeout, opts.Detector, opts.Clock = cfg.LockTimeout, cfg.Detector, cfg.Clock
	if barriers := cfg.EscalationBarriers; barriers != nil {
		opts.EscalationBarrier = func(_ txnlock.ColumnFamily, left, right txnlock.Range) bool {
			for _, k := range barriers {
				at := txnlock.Point(k).Start()
				if left.End().Compare(at) <= 0 && right.Start().Compare(at) >= 0 {
					return true
				}
			}
			return false
		}
	}
	m, err := New(opts)
	if err != nil {
		return nil, err
	}
	m.queued = cfg.Queued
	return checked{m}, nil
}

// checked is a Manager whose invariants the contract harness checks after
// every command.
type checked struct{ *Manager }

func (c checked) CheckInvariants() error { return c.checkInvariants() }
