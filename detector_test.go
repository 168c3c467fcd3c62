package txnlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// finiteDetector is the real detector claiming that it needs every wait to
// end by a timeout, as one across processes does.
type finiteDetector struct{ detect.Detector }

func (f finiteDetector) Seam() detect.Detector { return f }
func (finiteDetector) FiniteWaits() bool       { return true }

// TestFiniteWaits: with a detector that needs finite waits, a manager
// refuses WaitForever in its options and in a request (a typed error, no
// lock state changed), and takes every other timeout.
func TestFiniteWaits(t *testing.T) {
	d, err := deadlock.New(deadlock.Options{})
	require.NoError(t, err)
	defer d.Close()
	finite := finiteDetector{d.Seam()}
	for _, c := range []struct {
		name string
		open func(txnlock.WaitOptions) (txnlock.Manager, error)
	}{
		{"point", func(wo txnlock.WaitOptions) (txnlock.Manager, error) {
			return pointlock.New(pointlock.Options{WaitOptions: wo})
		}},
		{"range", func(wo txnlock.WaitOptions) (txnlock.Manager, error) {
			return rangelock.New(rangelock.Options{WaitOptions: wo})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.open(txnlock.WaitOptions{Detector: finite, LockTimeout: txnlock.WaitForever})
			require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
			require.ErrorContains(t, err, "WaitForever")
			// The same options are valid with the ordinary detector.
			m, err := c.open(txnlock.WaitOptions{Detector: d, LockTimeout: txnlock.WaitForever})
			require.NoError(t, err)
			require.NoError(t, m.Close())

			m, err = c.open(txnlock.WaitOptions{Detector: finite})
			require.NoError(t, err)
			defer m.Close()
			ctx := context.Background()
			k := txnlock.Point([]byte("k"))
			err = m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive, Timeout: txnlock.WaitForever})
			require.ErrorIs(t, err, txnlock.ErrInvalidTimeout)
			require.Zero(t, m.Stats().CurrentLocks, "a refused request changes nothing")
			require.Zero(t, m.Stats().Acquired)
			for _, timeout := range []time.Duration{txnlock.DefaultTimeout, txnlock.NoWait, time.Second} {
				require.NoError(t, m.Lock(ctx, txnlock.Request{Txn: 1, Range: k, Mode: txnlock.Exclusive, Timeout: timeout}))
			}
		})
	}
}
