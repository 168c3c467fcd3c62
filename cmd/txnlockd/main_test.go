package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"github.com/txnlock/txnlock/cmd/txnlockd/server"
	"github.com/txnlock/txnlock/deadlock"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--lock", "range", "--cf-layout", "per-index", "--autoinc-mode", "2",
		"--lock-wait-timeout", "3s", "--user", "app:pw", "--allow-empty-root", "--deadlock-victim", "youngest",
		"--delay-rule", "UPDATE sbtest1 SET k=k+1 WHERE id=?=5", "--delay-rule", "0x12=1s"})
	require.NoError(t, err)
	require.Equal(t, engine.LockRange, o.Engine.Lock)
	require.Equal(t, engine.LayoutPerIndex, o.Engine.Layout)
	require.Equal(t, 2, o.Engine.AutoIncMode)
	require.Equal(t, 3*time.Second, o.Engine.LockTimeout)
	require.Equal(t, map[string]string{"app": "pw"}, o.Users)
	require.True(t, o.AllowEmptyRoot)
	require.Equal(t, deadlock.VictimYoungest, o.Engine.Detector.Victim)
	require.Equal(t, []server.DelayRule{{Digest: "UPDATE sbtest1 SET k=k+1 WHERE id=?", Delay: 5 * time.Millisecond}, {Digest: "0x12", Delay: time.Second}}, o.DelayRules)

	for _, bad := range [][]string{{"--user", "nopassword"}, {"--deadlock-victim", "oldest"}, {"--delay-rule", "x=soon"}, {"extra"}} {
		_, err := parseFlags(bad)
		require.Error(t, err, "%v", bad)
	}
}
