package optcheck

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func TestProblems(t *testing.T) {
	var p Problems
	require.NoError(t, p.Err(), "no problem, no error")
	o := txnlock.WaitOptions{LockTimeout: -5}
	p.Addf("first %d", 1)
	p.Merge(o.Validate())
	p.Merge(nil)
	p.Merge(errors.New("plain"))
	var oe *txnlock.OptionsError
	require.True(t, errors.As(p.Err(), &oe))
	require.ErrorIs(t, p.Err(), txnlock.ErrInvalidOptions)
	require.Len(t, oe.Problems, 3, "every problem, once")
	require.Equal(t, "first 1", oe.Problems[0])
}

func TestResolveTimeout(t *testing.T) {
	for _, c := range []struct {
		in     time.Duration
		finite bool
		want   time.Duration
		err    bool
	}{
		{0, false, time.Second, false},
		{txnlock.NoWait, false, txnlock.NoWait, false},
		{txnlock.WaitForever, false, txnlock.WaitForever, false},
		{7, false, 7, false},
		{-2, false, 0, true},
		// A detector that needs finite waits refuses WaitForever only.
		{txnlock.WaitForever, true, 0, true},
		{0, true, time.Second, false},
		{txnlock.NoWait, true, txnlock.NoWait, false},
		{7, true, 7, false},
	} {
		got, err := ResolveTimeout(c.in, time.Second, c.finite)
		require.Equal(t, c.err, err != nil, "%v finite=%v", c.in, c.finite)
		if c.err {
			require.ErrorIs(t, err, txnlock.ErrInvalidTimeout)
		}
		require.Equal(t, c.want, got)
	}
}
