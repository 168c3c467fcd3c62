package txnlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLockErrorUnwraps(t *testing.T) {
	err := error(&LockError{Op: "lock", Txn: 3, CF: 1, Range: Point([]byte("k")), Mode: Exclusive, Blockers: []TxnID{7}, Err: ErrLockTimeout})
	require.ErrorIs(t, err, ErrLockTimeout)
	require.NotErrorIs(t, err, ErrDeadlock)
	require.Equal(t, "txnlock: lock txn 3 cf 1 [k] X: lock wait timeout (blocked by [7])", err.Error())
	var le *LockError
	require.True(t, errors.As(fmt.Errorf("wrapped: %w", err), &le))
	require.Equal(t, TxnID(3), le.Txn)

	cfErr := &LockError{Op: "add column family", CF: 4, Err: ErrColumnFamilyExists}
	require.Equal(t, "txnlock: add column family cf 4: column family already exists", cfErr.Error(), "no txn or range that the call did not have")
	badRange := &LockError{Op: "lock", Txn: 1, Mode: Shared, Err: ErrInvalidRange}
	require.Equal(t, "txnlock: lock txn 1 cf 0 <invalid range> S: invalid range", badRange.Error())

	closeErr := &LockError{Op: "close", Err: ErrClosed}
	require.Equal(t, "txnlock: close: closed", closeErr.Error(), "no column family that the call did not have")
	unlockAll := &LockError{Op: "unlock all", Txn: 1, Err: ErrClosed}
	require.Equal(t, "txnlock: unlock all txn 1: closed", unlockAll.Error())

	ctxErr := &LockError{Op: "lock", Txn: 1, Range: Point(nil), Err: context.Canceled}
	require.ErrorIs(t, ctxErr, context.Canceled)
}

func TestDeadlockError(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &DeadlockError{
		Victim: 2,
		Cycle: []CycleEntry{
			{Txn: 1, Lock: LockRef{CF: 0, Range: Point([]byte("a")), Mode: Exclusive}, Blockers: []TxnID{2}, LocksHeld: 1},
			{Txn: 2, Lock: LockRef{CF: 1, Range: Point([]byte("b")), Mode: Shared}, Blockers: []TxnID{1}, LocksHeld: 3},
		},
		Time: at,
	}
	var err error = &LockError{Op: "lock", Txn: 2, Err: d}
	require.ErrorIs(t, err, ErrDeadlock)
	var got *DeadlockError
	require.True(t, errors.As(err, &got))
	require.Equal(t, "txnlock: deadlock: cycle 1 -> 2 (victim txn 2)", d.Error())
	rep := d.Report()
	require.True(t, strings.HasPrefix(rep, "------------------------\nDEADLOCK\n------------------------\n2026-"), rep)
	d.Seq = 4
	require.True(t, strings.HasPrefix(d.Report(), "------------------------\nDEADLOCK 4\n------------------------\n2026-"), d.Report())
	d.Latest = true
	rep = d.Report()
	require.True(t, strings.HasPrefix(rep, "------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n2026-01-01 00:00:00.000000, deadlock 4\n"), rep)
	require.Contains(t, rep, "*** (2) WAITING FOR cf 1 [b] mode S, blocked by [1]")
	require.True(t, strings.HasSuffix(rep, "*** WE ROLL BACK TRANSACTION 2\n"))

	lim := &DeadlockError{Victim: 5, LimitExceeded: true, Limit: "depth"}
	require.ErrorIs(t, lim, ErrDeadlock)
	require.Contains(t, lim.Error(), "depth limit exceeded")
}

func TestModes(t *testing.T) {
	require.True(t, Shared.Compatible(Shared))
	require.False(t, Shared.Compatible(Exclusive))
	require.False(t, Exclusive.Compatible(Shared))
	require.False(t, Exclusive.Compatible(Exclusive))
	require.True(t, Exclusive.Covers(Shared))
	require.False(t, Shared.Covers(Exclusive))
	require.Equal(t, Exclusive, Shared.Max(Exclusive))
	require.False(t, Mode(0).Valid())
	require.Equal(t, "Mode(0)", Mode(0).String())
	require.False(t, TxnID(0).Valid())
}

func TestWaitOptions(t *testing.T) {
	var o WaitOptions
	o.EnsureDefaults()
	require.Equal(t, DefaultLockTimeout, o.LockTimeout)
	require.NoError(t, o.Validate())
	o.LockTimeout = -5
	err := o.Validate()
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.Contains(t, err.Error(), "LockTimeout")

}

func TestStatusString(t *testing.T) {
	r, _ := Inclusive([]byte("10"), []byte("20"))
	s := Status{
		Locks: []LockStatus{{CF: 1, Range: Point([]byte("b")), Mode: Shared, Holders: []TxnID{1, 2}}, {CF: 0, Range: r, Mode: Exclusive, Holders: []TxnID{3}}},
		Waits: []WaitStatus{{Txn: 4, CF: 0, Range: Point([]byte("15")), Mode: Exclusive, Blockers: []TxnID{3}}},
	}
	s.Sort()
	require.Equal(t, `locks:
  cf 0 [10, 20] X holders=[3]
  cf 1 [b]      S holders=[1 2]
waits:
  txn 4 cf 0 [15] X blockers=[3]
`, s.String())
}

// TestNotGranted: a timeout and a NoWait refusal are told apart, and both
// are a lock not granted.
func TestNotGranted(t *testing.T) {
	timeout := error(&LockError{Op: "lock", Txn: 3, Range: Point([]byte("k")), Mode: Exclusive, Blockers: []TxnID{7}, Err: ErrLockTimeout})
	nowait := error(&LockError{Op: "lock", Txn: 3, Range: Point([]byte("k")), Mode: Exclusive, Blockers: []TxnID{7}, Err: ErrLockNoWait})
	require.ErrorIs(t, timeout, ErrLockNotGranted)
	require.ErrorIs(t, nowait, ErrLockNotGranted)
	require.ErrorIs(t, nowait, ErrLockNoWait)
	require.NotErrorIs(t, nowait, ErrLockTimeout)
	require.NotErrorIs(t, timeout, ErrLockNoWait)
	require.NotErrorIs(t, ErrLockNotGranted, ErrLockTimeout)
	require.Equal(t, "txnlock: lock txn 3 cf 0 [k] X: lock not free and NoWait set (blocked by [7])", nowait.Error())
}
