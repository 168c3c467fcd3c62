package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/txnlock/txnlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fakeSpec(w Workload, threads int, events int64) RunSpec {
	return RunSpec{
		Workload: w, Threads: threads, Events: events, Seed: 7,
		Table: TableConfig{Tables: 1, TableSize: 1000, Lock: LockPoint},
	}
}

// TestRunQueriesPerTransaction: sysbench's statement mixes, BEGIN and
// COMMIT counted as queries for the explicit-transaction workloads.
func TestRunQueriesPerTransaction(t *testing.T) {
	for _, tc := range []struct {
		w                    Workload
		reads, writes, other uint64 // per transaction
	}{
		{OLTPWriteOnly, 0, 4, 2},
		{OLTPReadWrite, 14, 4, 2},
		{OLTPUpdateNonIndex, 0, 1, 0},
		{OLTPPointSelect, 1, 0, 0},
	} {
		t.Run(string(tc.w), func(t *testing.T) {
			var o fakeOpener
			r, err := Run(context.Background(), o.open, fakeSpec(tc.w, 1, 200))
			require.NoError(t, err)
			require.EqualValues(t, 200, r.Txns)
			assert.Equal(t, 200*tc.reads, r.Reads)
			assert.Equal(t, 200*tc.writes, r.Writes)
			assert.Equal(t, 200*tc.other, r.Other)
			assert.Equal(t, 200*(tc.reads+tc.writes+tc.other), r.Queries())
			assert.Zero(t, r.Errors())
			assert.InDelta(t, 200, r.EventsAvg, 0)
			assert.Zero(t, r.EventsStddev)
			assert.True(t, r.Verify.OK())
			assert.LessOrEqual(t, r.LatMin, r.LatP95)
			assert.LessOrEqual(t, r.LatP95, r.LatMax)
			assert.Len(t, o.opened, 1, "one fresh table per run")
		})
	}
}

// TestRunLocksPerTxn: the lock requests of committed transactions only.
func TestRunLocksPerTxn(t *testing.T) {
	var o fakeOpener
	o.setup = func(db *fakeDB) {
		db.fault = func(k stmtKind, n int) error {
			if k == stmtInsert && n%4 == 0 { // after 3 locks: must not count
				return &txnlock.LockError{Op: "lock", Err: txnlock.ErrLockTimeout}
			}
			return nil
		}
	}
	r, err := Run(context.Background(), o.open, fakeSpec(OLTPWriteOnly, 1, 400))
	require.NoError(t, err)
	assert.EqualValues(t, 300, r.Txns)
	assert.EqualValues(t, 100, r.Timeouts)
	// 3 keys per transaction, fewer when two random ids collide.
	assert.InDelta(t, 3, r.LocksPerTxn(), 0.05)
	// The fake's lock calls take 1µs each: committed transactions' only.
	assert.Equal(t, time.Duration(r.LockRequests)*time.Microsecond, r.LockTime)
	assert.Equal(t, r.LockTime/time.Duration(r.Txns), r.LockTimePerTxn())
}

// TestRunIgnoredErrors: deadlocks and timeouts are told apart, rolled
// back and counted; every event is either a transaction or an error.
func TestRunIgnoredErrors(t *testing.T) {
	var o fakeOpener
	o.setup = func(db *fakeDB) {
		db.fault = func(k stmtKind, n int) error {
			switch {
			case k == stmtUpdateIndex && n%10 == 0:
				return &txnlock.LockError{Op: "lock", Err: &txnlock.DeadlockError{Victim: 1}}
			case k == stmtDelete && n%7 == 0:
				return &txnlock.LockError{Op: "lock", Err: txnlock.ErrLockTimeout}
			}
			return nil
		}
	}
	r, err := Run(context.Background(), o.open, fakeSpec(OLTPWriteOnly, 1, 1000))
	require.NoError(t, err)
	assert.EqualValues(t, 100, r.Deadlocks)
	// Deletes run only in the 900 events that passed the first update.
	assert.EqualValues(t, 900/7, r.Timeouts)
	assert.EqualValues(t, 1000, r.Txns+r.Errors())
	// Queries that completed: BEGIN of every event, statements until the
	// failure, COMMIT of the committed ones.
	assert.Equal(t, 1000+4*r.Txns+r.Txns+r.Timeouts*2, r.Queries())
}

// TestRunUnexpectedError: an error sysbench was not told to ignore stops
// the run.
func TestRunUnexpectedError(t *testing.T) {
	var o fakeOpener
	boom := errors.New("boom")
	o.setup = func(db *fakeDB) {
		db.fault = func(k stmtKind, n int) error {
			if n == 5 {
				return boom
			}
			return nil
		}
	}
	_, err := Run(context.Background(), o.open, fakeSpec(OLTPWriteOnly, 4, 1000))
	require.ErrorIs(t, err, ErrUnexpected)
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "bench: oltp_write_only: unexpected statement error: boom", "operation first")
}

// TestRunErrorText: an error from the table reads operation first, with
// one prefix.
func TestRunErrorText(t *testing.T) {
	cause := errors.New(`pebbletxn: open "/x": damaged store`)
	_, err := Run(context.Background(), func(context.Context, TableConfig) (DB, error) { return nil, cause },
		fakeSpec(OLTPWriteOnly, 1, 10))
	require.ErrorIs(t, err, cause)
	require.EqualError(t, err, `bench: open table: open "/x": damaged store`)
}

// TestRunEventsAcrossThreads: --events is a total over the threads.
func TestRunEventsAcrossThreads(t *testing.T) {
	var o fakeOpener
	r, err := Run(context.Background(), o.open, fakeSpec(OLTPUpdateNonIndex, 8, 1234))
	require.NoError(t, err)
	assert.EqualValues(t, 1234, r.Txns)
	assert.InDelta(t, 1234.0/8, r.EventsAvg, 1e-9)
}

// TestRunTimeLimit: a time-limited run ends (the limit is only checked
// to end the run, never asserted as a duration).
func TestRunTimeLimit(t *testing.T) {
	var o fakeOpener
	spec := fakeSpec(OLTPPointSelect, 2, 0)
	spec.Time = 20 * time.Millisecond
	var buf bytes.Buffer
	spec.ReportInterval, spec.IntervalOut = 5*time.Millisecond, &buf
	var fracs []float64
	spec.Progress = func(f float64) { fracs = append(fracs, f) }
	r, err := Run(context.Background(), o.open, spec)
	require.NoError(t, err)
	assert.Positive(t, r.Txns)
	assert.GreaterOrEqual(t, r.Elapsed, spec.Time)
	assert.Contains(t, buf.String(), "thds: 2 tps: ")
	for _, f := range fracs {
		assert.LessOrEqual(t, f, 1.0)
	}
}

// TestRunCanceled: a canceled context ends a run without a time limit.
func TestRunCanceled(t *testing.T) {
	var o fakeOpener
	ctx, cancel := context.WithCancel(context.Background())
	o.setup = func(db *fakeDB) {
		db.fault = func(k stmtKind, n int) error {
			if n == 100 {
				cancel()
			}
			return nil
		}
	}
	spec := fakeSpec(OLTPPointSelect, 2, 0)
	spec.Time = time.Hour
	_, err := Run(ctx, o.open, spec)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunBadSpec(t *testing.T) {
	var o fakeOpener
	_, err := Run(context.Background(), o.open, fakeSpec(OLTPWriteOnly, 0, 10))
	require.Error(t, err)
	_, err = Run(context.Background(), o.open, fakeSpec(OLTPWriteOnly, 1, 0))
	require.Error(t, err)
	assert.Empty(t, o.opened)
}

// TestDelayAndDigests: a 2 ms rule on one digest makes that statement's
// minimum time at least 2 ms and leaves the others undelayed; counts and
// rows per digest add up.
func TestDelayAndDigests(t *testing.T) {
	var o fakeOpener
	rules := []DelayRule{{Digest: "UPDATE sbtest1 SET k=k+1 WHERE id=?", Delay: 2 * time.Millisecond}}
	delays, err := newDelayTable(0, rules, 1)
	require.NoError(t, err)
	spec := fakeSpec(OLTPWriteOnly, 1, 20)
	spec.Delays, spec.DigestStats = delays, true
	r, err := Run(context.Background(), o.open, spec)
	require.NoError(t, err)
	byText := map[string]DigestStat{}
	for _, d := range r.Digests {
		byText[d.Text] = d
	}
	require.Len(t, byText, 6, "BEGIN, COMMIT, and four statements")
	for text, d := range byText {
		assert.EqualValues(t, 20, d.Count, text)
		assert.LessOrEqual(t, d.Min, d.Max)
		assert.GreaterOrEqual(t, d.Sum, time.Duration(d.Count)*d.Min)
	}
	assert.GreaterOrEqual(t, byText["UPDATE sbtest1 SET k=k+1 WHERE id=?"].Min, 2*time.Millisecond)
	assert.GreaterOrEqual(t, r.LatMin, 2*time.Millisecond)
	assert.EqualValues(t, 20, byText["INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)"].Rows)
	assert.Equal(t, stmtDigest{Kind: stmtUpdateIndex, Table: 1}.ID(), byText["UPDATE sbtest1 SET k=k+1 WHERE id=?"].Digest)

	var buf bytes.Buffer
	require.NoError(t, writeDigestStats(&buf, r.Digests))
	assert.Contains(t, buf.String(), "digest_text")
	assert.Contains(t, buf.String(), "UPDATE sbtest1 SET k=k+1 WHERE id=?")
}

func TestGlobalDelay(t *testing.T) {
	var o fakeOpener
	delays, err := newDelayTable(time.Millisecond, nil, 1)
	require.NoError(t, err)
	spec := fakeSpec(OLTPUpdateNonIndex, 1, 5)
	spec.Delays = delays
	r, err := Run(context.Background(), o.open, spec)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.LatMin, time.Millisecond)
}

// TestDelayTable: a rule names a digest by id (any case) or text.
func TestDelayTable(t *testing.T) {
	_, err := newDelayTable(0, []DelayRule{{Digest: "SELECT 1", Delay: 1}}, 2)
	require.ErrorContains(t, err, "names no statement")
	dt, err := newDelayTable(0, []DelayRule{{Digest: strings.ToLower(stmtDigest{Kind: stmtDelete, Table: 2}.ID()), Delay: 5}}, 2)
	require.NoError(t, err)
	assert.EqualValues(t, 5, dt.delay(stmtDelete, 2))
	assert.Zero(t, dt.delay(stmtDelete, 1))
}

// TestRunOrder: mirrored blocks, every second one from the other end.
func TestRunOrder(t *testing.T) {
	p, r, n := LockPoint, LockRange, LockNone
	assert.Equal(t, []LockKind{p, r, r, p}, runOrder([]LockKind{p, r}, 1))
	assert.Equal(t, []LockKind{p, r, r, p, r, p, p, r}, runOrder([]LockKind{p, r}, 2))
	assert.Equal(t, []LockKind{p, r, n, n, r, p}, runOrder([]LockKind{p, r, n}, 1))
}
