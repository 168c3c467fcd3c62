package sbtest

import (
	"errors"

	"github.com/txnlock/txnlock"
)

// newManager builds the lock manager for o.Lock and whatever must be
// closed with it.
func newManager(o Options) (txnlock.Manager, []func() error, error) {
	if o.Manager != nil {
		return o.Manager, nil, nil
	}
	return nil, nil, errors.New("sbtest: the lock manager packages are not built yet; set Options.Manager")
}
