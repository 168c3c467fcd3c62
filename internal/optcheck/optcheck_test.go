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
		in, want time.Duration
		err      bool
	}{{0, time.Second, false}, {txnlock.NoWait, txnlock.NoWait, false}, {txnlock.WaitForever, txnlock.WaitForever, false}, {7, 7, false}, {-2, 0, true}} {
		got, err := ResolveTimeout(c.in, time.Second)
		require.Equal(t, c.err, err != nil, "%v", c.in)
		require.Equal(t, c.want, got)
	}
}
