package bench

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/txnlock/txnlock"
)

func slapOpts(lt LoadType, clients ...int) SlapOptions {
	return SlapOptions{Concurrency: clients, Iterations: 2, Locks: []LockKind{LockPoint}, LoadType: lt, NumberOfQueries: 100, TableOptions: TableOptions{TableSize: 10}}
}

// TestSlapAccounting: victims and timeouts are retried, not lost; the row
// check finds exactly the rows inserted.
func TestSlapAccounting(t *testing.T) {
	var o fakeOpener
	o.setup = func(db *fakeDB) {
		db.det = DeadlockStats{Trips: 3, Deferred: 3}
		db.detGrowth = DeadlockStats{Trips: 2, Deferred: 2}
		db.fault = func(k stmtKind, n int) error {
			switch {
			case k == stmtInsertAuto && n%5 == 0:
				return &txnlock.LockError{Op: "lock", Err: &txnlock.DeadlockError{Victim: 1}}
			case k == stmtInsertAuto && n%7 == 0:
				return &txnlock.LockError{Op: "lock", Err: &txnlock.DeadlockError{Victim: 1, LimitExceeded: true, Limit: "depth"}}
			case k == stmtSimpleRange && n%3 == 0: // the fake records scans as ranges
				return &txnlock.LockError{Op: "lock", Err: txnlock.ErrLockTimeout}
			}
			return nil
		}
	}
	rs, err := RunSlap(context.Background(), o.open, slapOpts(LoadMixed, 4), nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	r := rs[0]
	assert.Equal(t, 25, r.QueriesPerClient)
	assert.Equal(t, 2, r.Iterations)
	assert.Len(t, o.opened, 2, "a fresh table per iteration")
	// Per iteration 4 clients x 25 queries: 52 inserts and 48 scans
	// (clients alternate, starting with an insert).
	assert.EqualValues(t, 2*(10+52), r.RowsExpected)
	assert.Equal(t, r.RowsExpected, r.RowsFound)
	assert.Zero(t, r.DuplicateIDs)
	assert.True(t, r.CheckOK())
	assert.Positive(t, r.Deadlocks)
	assert.Positive(t, r.Assumed)
	assert.Positive(t, r.Timeouts)
	assert.Equal(t, r.Deadlocks+r.Assumed+r.Timeouts, r.Retries)
	assert.EqualValues(t, 2*52, r.Inserts)
	assert.Positive(t, r.InsertRollbacks)
	assert.EqualValues(t, r.InsertRollbacks, r.AutoIncGaps, "each rolled-back insert consumed an id")
	assert.EqualValues(t, 2*2, r.Trips, "trips are counted since the iteration began")
	assert.EqualValues(t, 2*2, r.Deferred, "and so are deferred searches")
	assert.LessOrEqual(t, r.Min, r.Avg)
	assert.LessOrEqual(t, r.Avg, r.Max)

	var buf bytes.Buffer
	WriteSlapReport(&buf, rs)
	for _, want := range []string{
		"Running for lock point (like InnoDB: row locks)",
		"Average number of seconds to run all queries: ",
		"Number of clients running queries: 4",
		"Average number of queries per client: 25",
		"Row check over 2 iterations: 124 rows expected, 124 found, 0 duplicate ids: ok",
		fmt.Sprintf("AUTO-INC ids: 104 inserted, %d skipped (gaps), %d inserts rolled back", r.AutoIncGaps, r.InsertRollbacks),
	} {
		assert.Contains(t, buf.String(), want)
	}
}

// TestSlapRowCheckFails: an auto-increment that hands out an id twice is
// caught.
func TestSlapRowCheckFails(t *testing.T) {
	var o fakeOpener
	o.setup = func(db *fakeDB) { db.dupAutoInc = true }
	rs, err := RunSlap(context.Background(), o.open, slapOpts(LoadWrite, 2), nil)
	require.NoError(t, err)
	assert.Positive(t, rs[0].DuplicateIDs)
	assert.False(t, rs[0].CheckOK())
	var buf bytes.Buffer
	WriteSlapReport(&buf, rs)
	assert.Contains(t, buf.String(), "FAILED")
}

// TestSlapAutoIncGaps: an auto-increment that skips ids without a
// rolled-back insert fails the check in mode 0 (a table AUTO-INC lock);
// in mode 2 the gaps are counted and shown only.
func TestSlapAutoIncGaps(t *testing.T) {
	for _, mode := range []int{0, 2} {
		var o fakeOpener
		o.setup = func(db *fakeDB) { db.skipAutoInc = true }
		opts := slapOpts(LoadWrite, 2)
		opts.AutoIncMode = mode
		rs, err := RunSlap(context.Background(), o.open, opts, nil)
		require.NoError(t, err)
		r := rs[0]
		assert.EqualValues(t, 2*100, r.Inserts)
		assert.EqualValues(t, 2*100, r.AutoIncGaps, "one id skipped before each")
		assert.Zero(t, r.InsertRollbacks)
		var buf bytes.Buffer
		WriteSlapReport(&buf, rs)
		assert.Contains(t, buf.String(), "AUTO-INC ids: 200 inserted, 200 skipped (gaps), 0 inserts rolled back")
		if mode == 0 {
			assert.False(t, r.CheckOK())
			assert.Contains(t, buf.String(), "FAILED: AUTO-INC mode 0: 100 ids skipped without a rolled-back insert")
		} else {
			assert.True(t, r.CheckOK(), "%v", r.Problems)
		}
	}
}

// TestSlapLoadTypes: each load type runs its statement, and the total is
// split across the clients.
func TestSlapLoadTypes(t *testing.T) {
	for lt, kind := range map[LoadType]stmtKind{LoadUpdate: stmtUpdateIndex, LoadWrite: stmtInsertAuto, LoadKey: stmtPointSelect, LoadRead: stmtFullScan} {
		var o fakeOpener
		var dbs []*fakeDB
		o.setup = func(db *fakeDB) { dbs = append(dbs, db) }
		opts := slapOpts(lt, 3, 7)
		opts.DigestStats = true
		rs, err := RunSlap(context.Background(), o.open, opts, nil)
		require.NoError(t, err, lt)
		require.Len(t, rs, 2)
		assert.Equal(t, 33, rs[0].QueriesPerClient)
		assert.Equal(t, 14, rs[1].QueriesPerClient)
		for _, db := range dbs[:2] {
			kindCalls := db.mu.calls[kind]
			if kind == stmtFullScan {
				kindCalls = db.mu.calls[stmtSimpleRange] // the fake records scans as ranges
			}
			assert.Equal(t, 99, kindCalls, lt)
		}
		require.Len(t, rs[0].Digests, 1, lt)
		assert.EqualValues(t, 2*99, rs[0].Digests[0].Count)
	}
}

func TestSlapValidate(t *testing.T) {
	o := SlapOptions{Concurrency: []int{0}, Iterations: -1, Locks: []LockKind{"myisam"}, LoadType: "bulk",
		AutoIncMode: 3, NumberOfQueries: -1,
		TableOptions:    TableOptions{TableSize: -1, Layout: "x", Storage: "y"},
		ThrottleOptions: ThrottleOptions{Delay: -1}}
	err := o.Validate()
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	for _, want := range []string{"concurrency 0", "iterations", "myisam", "load-type", "autoinc-mode", "number-of-queries", "table-size", "cf-layout", "storage", "delay"} {
		assert.Contains(t, err.Error(), want)
	}
	var empty SlapOptions
	assert.ErrorContains(t, empty.Validate(), "concurrency: none given")
	var d SlapOptions
	d.EnsureDefaults()
	require.NoError(t, d.Validate())
	assert.Contains(t, d.String(), "--concurrency=200,500 --iterations=10 --lock=none,table,point,range --load-type=mixed --autoinc-mode=0")
}
