package sbtest

import (
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// newManager builds the lock manager for o.Lock (rangelock for LockRange,
// pointlock otherwise; LockNone sends it nothing) and, unless o has one, a
// deadlock detector. It returns what the DB must close, in creation order.
func newManager(o Options) (txnlock.Manager, []func() error, error) {
	if o.Manager != nil {
		return o.Manager, nil, nil
	}
	var closers []func() error
	det := o.Detector
	if det == nil {
		d, err := deadlock.New(deadlock.Options{})
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, d.Close)
		det = d
	}
	wo := txnlock.WaitOptions{LockTimeout: o.LockTimeout, Detector: det}
	var mgr txnlock.Manager
	var err error
	if o.Lock == LockRange {
		mgr, err = newRange(rangelock.Options{WaitOptions: wo})
	} else {
		mgr, err = newPoint(pointlock.Options{WaitOptions: wo})
	}
	if err != nil {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		return nil, nil, err
	}
	return mgr, append(closers, mgr.Close), nil
}

// newRange and newPoint return a nil interface, not a typed nil, on error.
func newRange(o rangelock.Options) (txnlock.Manager, error) {
	m, err := rangelock.New(o)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func newPoint(o pointlock.Options) (txnlock.Manager, error) {
	m, err := pointlock.New(o)
	if err != nil {
		return nil, err
	}
	return m, nil
}
