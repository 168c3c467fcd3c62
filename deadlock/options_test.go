package deadlock

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	require.NoError(t, o.Validate(), "the zero Options are valid: they mean the defaults")
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, "detection=on-block max_depth=200 max_steps=1000000 max_search_time=1ms breaker=defer victim=requester priority=false history_size=16 on_deadlock=false detect_delay=0s background_interval=1s", o.String())
	require.Equal(t, txnlock.SystemClock{}, o.Clock)
}

// TestOptionsValidateNamesEveryProblem: one Validate call lists every bad
// field, and New refuses the options with the same error.
func TestOptionsValidateNamesEveryProblem(t *testing.T) {
	o := Options{
		Detection:          Detection(7),
		MaxDepth:           -1,
		MaxSteps:           -5,
		MaxSearchTime:      -time.Millisecond,
		Breaker:            Breaker(9),
		Victim:             Victim(12),
		HistorySize:        -2,
		DetectDelay:        -time.Second,
		BackgroundInterval: -time.Second,
	}
	err := o.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	var oe *txnlock.OptionsError
	require.True(t, errors.As(err, &oe))
	require.Equal(t, []string{
		"unknown Detection Detection(7)",
		"MaxDepth -1 is negative",
		"MaxSteps -5 is negative",
		"MaxSearchTime -1ms is negative",
		"unknown Breaker Breaker(9)",
		"unknown Victim Victim(12)",
		"HistorySize -2 is negative",
		"DetectDelay -1s is negative",
		"BackgroundInterval -1s is negative",
	}, oe.Problems)

	_, err = New(o)
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	require.Contains(t, err.Error(), "MaxDepth -1")
	require.Contains(t, err.Error(), "unknown Victim")

	// The priority policy needs a Priority function.
	_, err = New(Options{Victim: VictimPriority})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	require.Contains(t, err.Error(), "Victim priority needs a Priority function")
}

func TestEnumStrings(t *testing.T) {
	require.Equal(t, "background", Background.String())
	require.Equal(t, "off", Off.String())
	require.Equal(t, "assume-deadlock", AssumeDeadlock.String())
	require.Equal(t, "youngest", VictimYoungest.String())
	require.Equal(t, "fewest-locks", VictimFewestLocks.String())
	require.Equal(t, "priority", VictimPriority.String())
}
