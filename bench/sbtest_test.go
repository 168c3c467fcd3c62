package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the driver against the real table (bench/sbtest on
// in-memory Pebble), with small tables and event limits.

func sbSpec(w Workload, lock LockKind, threads int, events int64) RunSpec {
	return RunSpec{
		Workload: w, Threads: threads, Events: events, Seed: 3,
		Table: TableConfig{Tables: 1, TableSize: 2000, Layout: LayoutShared, Storage: StorageMem, Lock: lock, LockTimeout: 5 * time.Second},
	}
}

// TestSBTestLocksPerTxn: MyRocks' published lock counts for oltp_write_only: 3
// with point locking, 7 with range locking (6 when the INSERT reuses the
// deleted row's k, or fewer when random ids collide), 3 without the
// secondary index; 0 with none.
func TestSBTestLocksPerTxn(t *testing.T) {
	for _, tc := range []struct {
		lock     LockKind
		noSK     bool
		min, max float64
	}{
		{LockPoint, false, 2.95, 3},
		{LockRange, false, 6.9, 7},
		{LockRange, true, 2.95, 3},
		{LockTable, false, 1, 1},
		{LockNone, false, 0, 0},
	} {
		spec := sbSpec(OLTPWriteOnly, tc.lock, 2, 300)
		spec.Table.NoSK = tc.noSK
		r, err := Run(context.Background(), OpenSBTest, spec)
		require.NoError(t, err, tc.lock)
		assert.EqualValues(t, 300, r.Txns+r.Errors(), tc.lock)
		// 6 queries per committed transaction, up to 5 per failed one.
		assert.GreaterOrEqual(t, r.Queries(), 6*r.Txns, tc.lock)
		assert.LessOrEqual(t, r.Queries(), 6*r.Txns+5*r.Errors(), tc.lock)
		assert.GreaterOrEqual(t, r.LocksPerTxn(), tc.min, "%s no_sk=%t", tc.lock, tc.noSK)
		assert.LessOrEqual(t, r.LocksPerTxn(), tc.max, "%s no_sk=%t", tc.lock, tc.noSK)
		if tc.lock != LockNone {
			assert.True(t, r.Verify.OK(), "%s: %v", tc.lock, r.Verify.Problems)
		}
		assert.EqualValues(t, 2000, r.Verify.Rows)
	}
}

// TestSBTestWorkloads: every workload runs on every layout.
func TestSBTestWorkloads(t *testing.T) {
	for i, w := range workloads {
		spec := sbSpec(w, LockRange, 3, 100)
		spec.Table.Layout = layouts[i%len(layouts)]
		spec.Table.Tables = 2
		spec.DigestStats = true
		r, err := Run(context.Background(), OpenSBTest, spec)
		require.NoError(t, err, w)
		assert.EqualValues(t, 100, r.Txns+r.Errors(), w)
		assert.True(t, r.Verify.OK(), "%s: %v", w, r.Verify.Problems)
		assert.NotEmpty(t, r.Digests)
	}
}

// TestSBTestDisk: a disk table lives in a directory of its own under Dir,
// removed at Close.
func TestSBTestDisk(t *testing.T) {
	dir := t.TempDir()
	spec := sbSpec(OLTPWriteOnly, LockPoint, 2, 50)
	spec.Table.Storage, spec.Table.Dir, spec.Table.TableSize = StorageDisk, dir, 200
	r, err := Run(context.Background(), OpenSBTest, spec)
	require.NoError(t, err)
	assert.True(t, r.Verify.OK())
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// TestSBTestSlap: mysqlslap's mixed load with the AUTO-INC table lock
// (autoinc mode 0): no row lost, no id twice, with every lock kind.
func TestSBTestSlap(t *testing.T) {
	rs, err := RunSlap(context.Background(), OpenSBTest, SlapOptions{
		Concurrency: []int{20}, Iterations: 1, Locks: []LockKind{LockNone, LockTable, LockPoint, LockRange},
		LoadType: LoadMixed, NumberOfQueries: 200, TableOptions: TableOptions{TableSize: 20},
	}, nil)
	require.NoError(t, err)
	require.Len(t, rs, 4)
	for _, r := range rs {
		assert.True(t, r.CheckOK(), "%s: %+v", r.Lock, r)
		assert.EqualValues(t, 20+100, r.RowsExpected, r.Lock)
	}
}
