package pointlock

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
	"github.com/txnlock/txnlock/internal/manualclock"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, txnlock.DefaultLockTimeout, o.LockTimeout)
	require.Equal(t, DefaultStripes(), o.Stripes)
	require.Zero(t, o.MaxLocks)
	require.Equal(t, "lock_timeout=5s detector=none clock=system stripes="+
		strconv.Itoa(o.Stripes)+" max_locks=unlimited", o.String())

	s := DefaultStripes()
	require.GreaterOrEqual(t, s, 16)
	require.GreaterOrEqual(t, s, 16*runtime.GOMAXPROCS(0))
	require.Zero(t, s&(s-1), "a power of two")
}

func TestDefaultStripesScales(t *testing.T) {
	old := runtime.GOMAXPROCS(5)
	defer runtime.GOMAXPROCS(old)
	require.Equal(t, 128, DefaultStripes()) // next power of two ≥ 80
	runtime.GOMAXPROCS(1)
	require.Equal(t, 16, DefaultStripes())
}

func TestOptionsValidateReportsEveryProblem(t *testing.T) {
	o := Options{Stripes: 12, MaxLocks: -1}
	o.LockTimeout = -5 * time.Second
	err := o.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	var oe *txnlock.OptionsError
	require.ErrorAs(t, err, &oe)
	require.Len(t, oe.Problems, 3, "%v", oe.Problems)
	require.Contains(t, err.Error(), "Stripes 12 is not a power of two")
	require.Contains(t, err.Error(), "MaxLocks -1")
	require.Contains(t, err.Error(), "LockTimeout")

	for _, bad := range []int{-16, MaxStripes * 2} {
		o := Options{Stripes: bad}
		o.EnsureDefaults()
		require.ErrorIs(t, o.Validate(), txnlock.ErrInvalidOptions, "stripes %d", bad)
	}
	_, err = New(Options{Stripes: 3})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
}

func TestOptionsString(t *testing.T) {
	o := Options{Stripes: 64, MaxLocks: 1000}
	o.LockTimeout = txnlock.NoWait
	o.Clock = manualclock.New()
	o.Detector = contract.NewSeamDetector()
	require.Equal(t, "lock_timeout=no-wait detector=*contract.SeamDetector "+
		"clock=*manualclock.Clock stripes=64 max_locks=1000", o.String())
	o.LockTimeout = txnlock.WaitForever
	require.Contains(t, o.String(), "lock_timeout=forever")

	m, err := New(o)
	require.NoError(t, err)
	require.Equal(t, o.String(), m.Options().String())
	require.NoError(t, m.Close())
}
