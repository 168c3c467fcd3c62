package sbtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// Lock requests per oltp_write_only transaction. Ours: 3 / 7 / 3 (point /
// range / range without the SK index; point-sk as range).
// MyRocks' published figures: 3 / 8 / 4 (it re-sends the INSERT's PK lock).
func TestLockCountsWriteOnly(t *testing.T) {
	for _, c := range []struct {
		lock   LockKind
		noSK   bool
		layout Layout
		want   int
	}{
		{LockPoint, false, LayoutShared, 3},
		{LockRange, false, LayoutShared, 7},
		{LockRange, true, LayoutShared, 3},
		{LockPoint, true, LayoutShared, 3},
		{LockRange, false, LayoutPerIndex, 7},
		{LockRange, false, LayoutPerTable, 7},
		{LockPointSK, false, LayoutShared, 7},
		{LockPointSK, true, LayoutShared, 3},
		{LockPointSK, false, LayoutPerIndex, 7},
		{LockTable, false, LayoutShared, 1},
		{LockNone, false, LayoutShared, 0},
	} {
		t.Run(fmt.Sprintf("%s/nosk=%t/%s", c.lock, c.noSK, c.layout), func(t *testing.T) {
			db := open(t, Options{Lock: c.lock, NoSK: c.noSK, Layout: c.layout})
			tx := db.Begin()
			row3, found, err := tx.PointSelect(bg, 1, 30)
			require.NoError(t, err)
			require.True(t, found)
			require.NoError(t, writeOnly(tx, 10, 20, 30, row3.K+1000))
			require.Equal(t, c.want, tx.LockRequests())
			require.NoError(t, tx.Commit())
			verify(t, db)
			// Re-inserting the deleted row's own k: its SK lock is held
			// already, so range locking sends one fewer.
			tx = db.Begin()
			row3, _, err = tx.PointSelect(bg, 1, 40)
			require.NoError(t, err)
			require.NoError(t, writeOnly(tx, 11, 21, 40, row3.K))
			want := c.want
			if c.lock.LocksSK() && !c.noSK {
				want--
			}
			require.Equal(t, want, tx.LockRequests())
			require.NoError(t, tx.Commit())
			verify(t, db)
		})
	}
}

func TestStatements(t *testing.T) {
	for _, lock := range []LockKind{LockPoint, LockRange, LockTable, LockNone} {
		t.Run(string(lock), func(t *testing.T) {
			db := open(t, Options{Lock: lock, Tables: 2})
			tx := db.Begin()
			r, found, err := tx.SelectForUpdate(bg, 2, 5)
			require.NoError(t, err)
			require.True(t, found)
			require.Len(t, r.C, 119)
			require.Len(t, r.Pad, 59)
			n, err := tx.UpdateIndex(bg, 2, 5)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			r2, _, err := tx.SelectForShare(bg, 2, 5)
			require.NoError(t, err)
			require.Equal(t, r.K+1, r2.K, "own write visible")
			n, err = tx.UpdateNonIndex(bg, 2, 6, "new c")
			require.NoError(t, err)
			require.Equal(t, 1, n)
			n, err = tx.Delete(bg, 2, 7)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			for _, f := range []func() (int, error){
				func() (int, error) { return tx.UpdateIndex(bg, 2, 10_000) },
				func() (int, error) { return tx.UpdateNonIndex(bg, 2, 7, "x") },
				func() (int, error) { return tx.Delete(bg, 2, 7) },
			} {
				n, err := f()
				require.NoError(t, err)
				require.Zero(t, n, "missing row: nothing affected")
			}
			rows, err := tx.RangeSelect(bg, 2, 4, 8, lock != LockNone)
			require.NoError(t, err)
			var ids []int64
			for _, r := range rows {
				ids = append(ids, r.ID)
			}
			require.Equal(t, []int64{4, 5, 6, 8}, ids)
			require.Equal(t, "new c", rows[2].C)
			rows, err = tx.RangeSelect(bg, 2, 9, 8, false)
			require.NoError(t, err)
			require.Empty(t, rows)
			require.NoError(t, tx.Commit())
			rep := verify(t, db)
			require.Equal(t, int64(199), rep.Rows)
			require.Equal(t, int64(199), rep.SKEntries)
			// Table 1 untouched.
			rows, err = db.Begin().RangeSelect(bg, 1, 1, 1000, false)
			require.NoError(t, err)
			require.Len(t, rows, 100)
		})
	}
}

func TestBadInput(t *testing.T) {
	_, err := Open(Options{Tables: -1, Layout: "x", Lock: "y", AutoIncMode: 5})
	var oe *txnlock.OptionsError
	require.ErrorAs(t, err, &oe)
	require.Len(t, oe.Problems, 4, "%v", oe.Problems)

	db := open(t, Options{Lock: LockRange})
	tx := db.Begin()
	_, _, err = tx.PointSelect(bg, 0, 1)
	require.ErrorIs(t, err, ErrUnknownTable)
	_, err = tx.UpdateIndex(bg, 2, 1)
	require.ErrorIs(t, err, ErrUnknownTable)
	require.EqualError(t, err, "sbtest: table sbtest2: unknown table (tables are 1..1)", "operation first, one prefix")
	require.EqualError(t, tx.Insert(bg, 1, Row{ID: 500, C: strings.Repeat("c", 121)}), "sbtest: insert sbtest1 id 500: value too long: c has 121 bytes (max 120)")
	require.ErrorIs(t, tx.Insert(bg, 1, Row{ID: 500, C: strings.Repeat("c", 121)}), ErrValueTooLong)
	require.ErrorIs(t, tx.Insert(bg, 1, Row{ID: 500, Pad: strings.Repeat("p", 61)}), ErrValueTooLong)
	_, err = tx.UpdateNonIndex(bg, 1, 1, strings.Repeat("c", 121))
	require.ErrorIs(t, err, ErrValueTooLong)
	_, err = tx.InsertAuto(bg, 1, 1, "", strings.Repeat("p", 61))
	require.ErrorIs(t, err, ErrValueTooLong)
	before, _, err := tx.PointSelect(bg, 1, 3)
	require.NoError(t, err)
	require.ErrorIs(t, tx.Insert(bg, 1, Row{ID: 3, K: 1, C: "dup"}), ErrDuplicateKey)
	require.EqualError(t, tx.Insert(bg, 1, Row{ID: 3, K: 1, C: "dup"}), "sbtest: insert sbtest1 id 3: duplicate key")
	after, _, err := tx.PointSelect(bg, 1, 3)
	require.NoError(t, err)
	require.Equal(t, before, after, "a duplicate insert does not overwrite")
	require.NoError(t, tx.Insert(bg, 1, Row{ID: 500, K: 7}))
	require.ErrorIs(t, tx.Insert(bg, 1, Row{ID: 500, K: 8}), ErrDuplicateKey, "own insert is a duplicate too")
	require.NoError(t, tx.Commit())
	rep := verify(t, db)
	require.Equal(t, int64(101), rep.Rows)

	stmts := map[string]func(*Tx) error{
		"select":  func(x *Tx) error { _, _, err := x.PointSelect(bg, 1, 1); return err },
		"update":  func(x *Tx) error { _, err := x.UpdateIndex(bg, 1, 1); return err },
		"delete":  func(x *Tx) error { _, err := x.Delete(bg, 1, 1); return err },
		"insert":  func(x *Tx) error { return x.Insert(bg, 1, Row{ID: 900}) },
		"range":   func(x *Tx) error { _, err := x.RangeSelect(bg, 1, 1, 5, true); return err },
		"commit":  func(x *Tx) error { return x.Commit() },
		"rollbak": func(x *Tx) error { return x.Rollback() },
	}
	for name, f := range stmts {
		require.ErrorIs(t, f(tx), ErrTxnDone, "%s after commit", name)
	}
	rolled := db.Begin()
	_, err = rolled.UpdateIndex(bg, 1, 1)
	require.NoError(t, err)
	require.NoError(t, rolled.Rollback())
	for name, f := range stmts {
		require.ErrorIs(t, f(rolled), ErrTxnDone, "%s after rollback", name)
	}
	verify(t, db)

	open := db.Begin()
	_, err = open.UpdateIndex(bg, 1, 2)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	for name, f := range stmts {
		require.ErrorIs(t, f(open), ErrClosed, "%s on a closed DB", name)
		require.ErrorIs(t, f(db.Begin()), ErrClosed, "%s on a closed DB", name)
	}
	require.ErrorIs(t, db.Close(), ErrClosed)
	require.EqualError(t, db.Close(), "sbtest: close: closed", "operation first, one prefix")
	_, err = db.Verify()
	require.ErrorIs(t, err, txnlock.ErrClosed)
	require.EqualError(t, err, "sbtest: verify: closed")
	require.ErrorIs(t, db.Prepare(bg), ErrClosed)
}

// Under range locking a FOR UPDATE range select blocks an insert into its
// range until commit; under point locking the insert proceeds (a phantom:
// the documented trade-off).
func TestPhantoms(t *testing.T) {
	for _, lock := range []LockKind{LockPoint, LockRange} {
		t.Run(string(lock), func(t *testing.T) {
			opts := Options{Lock: lock}
			if lock == LockPoint {
				opts.LockTimeout = txnlock.NoWait // the insert must not wait at all
			}
			db := open(t, opts)
			del := db.Begin()
			_, err := del.Delete(bg, 1, 15)
			require.NoError(t, err)
			require.NoError(t, del.Commit())

			t1, t2 := db.Begin(), db.Begin()
			rows, err := t1.RangeSelect(bg, 1, 10, 20, true)
			require.NoError(t, err)
			require.Len(t, rows, 10)
			ins := func() error { return t2.Insert(bg, 1, Row{ID: 15, K: 1}) }
			if lock == LockPoint {
				require.NoError(t, ins())
				require.NoError(t, t2.Commit())
				rows, err = t1.RangeSelect(bg, 1, 10, 20, true)
				require.NoError(t, err)
				require.Len(t, rows, 11, "phantom row 15 appears")
				require.NoError(t, t1.Commit())
				verify(t, db)
				return
			}
			done := make(chan error, 1)
			go func() {
				err := ins()
				if err == nil {
					err = t2.Commit()
				}
				done <- err
			}()
			waitForWaiter(t, db.Manager(), t2.ID())
			rows, err = t1.RangeSelect(bg, 1, 10, 20, true)
			require.NoError(t, err)
			require.Len(t, rows, 10, "no phantom while t1 holds the range")
			require.NoError(t, t1.Commit())
			require.NoError(t, <-done)
			rows, err = db.Begin().RangeSelect(bg, 1, 10, 20, false)
			require.NoError(t, err)
			require.Len(t, rows, 11)
			verify(t, db)
		})
	}
}

// Two transactions update rows in opposite orders; the victim gets the
// typed deadlock error, rolls back, the other commits, and the table is
// consistent.
func TestDeadlockThenVerify(t *testing.T) {
	for _, lock := range []LockKind{LockPoint, LockRange, LockTable} {
		t.Run(string(lock), func(t *testing.T) {
			db := open(t, Options{Lock: lock, Tables: 2, LockTimeout: txnlock.WaitForever})
			t1, t2 := db.Begin(), db.Begin()
			// Table locking locks tables, not rows: use two tables.
			a, b := 1, 1
			if lock == LockTable {
				b = 2
			}
			_, err := t1.UpdateIndex(bg, a, 1)
			require.NoError(t, err)
			_, err = t2.UpdateIndex(bg, b, 2)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { _, err := t1.UpdateIndex(bg, b, 2); done <- err }()
			waitForWaiter(t, db.Manager(), t1.ID())
			_, err2 := t2.UpdateIndex(bg, a, 1)
			victim, survivor, verr := t2, t1, err2
			if err2 == nil {
				victim, survivor, verr = t1, t2, <-done
			}
			require.ErrorIs(t, verr, txnlock.ErrDeadlock)
			var de *txnlock.DeadlockError
			require.ErrorAs(t, verr, &de)
			require.NoError(t, victim.Rollback())
			if survivor == t1 {
				require.NoError(t, <-done)
			}
			require.NoError(t, survivor.Commit())
			verify(t, db)
			require.NotZero(t, db.LockStats().Deadlocks)
		})
	}
}

func TestAutoIncrement(t *testing.T) {
	for _, mode := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			db := open(t, Options{AutoIncMode: mode, LockTimeout: txnlock.NoWait})
			t1, t2 := db.Begin(), db.Begin()
			id, err := t1.InsertAuto(bg, 1, 5, "c", "pad")
			require.NoError(t, err)
			require.Equal(t, int64(101), id, "after the prepared rows")
			want := 1 // the PK lock
			if mode == 0 {
				want = 2 // and the AUTO-INC lock
			}
			require.Equal(t, want, t1.LockRequests())
			// The AUTO-INC lock ended with the statement: t2 (NoWait)
			// inserts while t1 is still open.
			id2, err := t2.InsertAuto(bg, 1, 5, "c", "pad")
			require.NoError(t, err)
			require.Equal(t, int64(102), id2)
			require.NoError(t, t2.Commit())
			require.NoError(t, t1.Rollback())
			id3, err := db.Begin().InsertAuto(bg, 1, 5, "", "")
			require.NoError(t, err)
			require.Equal(t, int64(103), id3, "ids are not reused after a rollback")
			verify(t, db)
		})
	}
}

// Mode 0: while one transaction's insert statement holds the AUTO-INC lock
// (it waits for a row lock inside the statement), another's InsertAuto
// waits for the AUTO-INC lock itself.
func TestAutoIncLockWaits(t *testing.T) {
	db := open(t, Options{AutoIncMode: 0})
	blocker, t1, t2 := db.Begin(), db.Begin(), db.Begin()
	// blocker holds PK 101, the next auto id, so t1's statement waits
	// inside InsertAuto with the AUTO-INC lock held.
	_, _, err := blocker.SelectForUpdate(bg, 1, 101)
	require.NoError(t, err)
	d1 := make(chan error, 1)
	go func() { _, err := t1.InsertAuto(bg, 1, 1, "", ""); d1 <- err }()
	waitForWaiter(t, db.Manager(), t1.ID())
	d2 := make(chan int64, 1)
	go func() { id, _ := t2.InsertAuto(bg, 1, 1, "", ""); d2 <- id }()
	waitForWaiter(t, db.Manager(), t2.ID())
	var aiWait bool
	for _, w := range db.Manager().Status().Waits {
		if w.Txn == t2.ID() {
			k, _ := w.Range.PointKey()
			aiWait = string(k) == string(lockKey("autoinc", 1))
		}
	}
	require.True(t, aiWait, "t2 waits for the AUTO-INC lock:\n%v", db.Manager().Status())
	require.NoError(t, blocker.Commit())
	require.NoError(t, <-d1)
	require.Equal(t, int64(102), <-d2)
	require.NoError(t, t1.Commit())
	require.NoError(t, t2.Commit())
	verify(t, db)
}

// With TimeLocks, a transaction adds up the time of its lock calls, waits
// included; without, LockTime stays 0.
func TestLockTime(t *testing.T) {
	plain := open(t, Options{})
	tx := plain.Begin()
	_, _, err := tx.SelectForUpdate(bg, 1, 30)
	require.NoError(t, err)
	require.Zero(t, tx.LockTime())
	require.NoError(t, tx.Commit())

	db := open(t, Options{TimeLocks: true})
	t1, t2 := db.Begin(), db.Begin()
	_, _, err = t1.SelectForUpdate(bg, 1, 30)
	require.NoError(t, err)
	require.Positive(t, t1.LockTime())
	done := make(chan error, 1)
	go func() { _, _, err := t2.SelectForUpdate(bg, 1, 30); done <- err }()
	waitForWaiter(t, db.Manager(), t2.ID())
	const held = 20 * time.Millisecond
	time.Sleep(held)
	require.NoError(t, t1.Commit())
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, t2.LockTime(), held, "the wait is counted")
	require.NoError(t, t2.Commit())
}

// Concurrent oltp_write_only transactions on each lock kind and layout;
// errors roll back and retry; the table is consistent at the end.
func TestConcurrentWriteOnly(t *testing.T) {
	for _, lock := range []LockKind{LockPoint, LockRange, LockTable} {
		for _, layout := range []Layout{LayoutShared, LayoutPerIndex} {
			t.Run(fmt.Sprintf("%s/%s", lock, layout), func(t *testing.T) {
				db := open(t, Options{Lock: lock, Layout: layout, Tables: 2, TableSize: 50})
				runConcurrent(t, db)
				verify(t, db)
				require.Empty(t, db.Manager().Status().Locks)
			})
		}
	}
}

// Verify catches a row without its SK entry and an SK entry without its
// row.
func TestVerifyDetects(t *testing.T) {
	db := open(t, Options{Layout: LayoutPerIndex})
	tb := db.tables[1]
	wb := db.TxnDB().NewWriteBatch()
	require.NoError(t, wb.Put(tb.pk, pkKey(tb.pkPrefix, 5000), encodeRow(Row{ID: 5000, K: 3})))
	require.NoError(t, wb.Put(tb.sk, skKey(tb.skPrefix, 4, 6000), nil))
	require.NoError(t, wb.Commit(false))
	wb.Close()
	rep, err := db.Verify()
	require.ErrorIs(t, err, ErrInconsistent)
	require.Equal(t, 1, rep.Missing)
	require.Equal(t, 1, rep.Extra)
}

// runConcurrent runs 4 goroutines × 100 oltp_write_only transactions on
// table 1 (ids 1..50); deadlocks, timeouts and duplicate keys roll back.
func runConcurrent(t *testing.T, db *DB) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 100 {
				tx := db.Begin()
				id := func() int64 { return 1 + rng.Int64N(50) }
				err := writeOnly(tx, id(), id(), id(), id())
				if err == nil {
					err = tx.Commit()
				} else {
					tx.Rollback()
				}
				if err != nil && !errors.Is(err, txnlock.ErrDeadlock) && !errors.Is(err, txnlock.ErrLockTimeout) && !errors.Is(err, ErrDuplicateKey) {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, failures)
}
