package pebbletxn

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

func TestReadYourWrites(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t1, t2 := begin(t, e.db), begin(t, e.db)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("1")))
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("b"), []byte("2")))
			require.Equal(t, "1", get(t, t1, "a"), "own write visible")
			require.Equal(t, "<none>", get(t, t2, "a"), "uncommitted write invisible to others")
			require.NoError(t, t1.Delete(bg, txnlock.DefaultColumnFamily, []byte("b")))
			require.Equal(t, "<none>", get(t, t1, "b"), "own delete visible")
			var seen []string
			require.NoError(t, t1.Scan(txnlock.DefaultColumnFamily, txnlock.All(), func(k, v []byte) bool {
				seen = append(seen, string(k)+"="+string(v))
				return true
			}))
			require.Equal(t, []string{"a=1"}, seen)
			require.NoError(t, t1.Commit())
			require.Equal(t, "1", get(t, t2, "a"), "committed write visible")
			require.Equal(t, "<none>", get(t, t2, "b"))
			require.NoError(t, t2.Rollback())
		})
	}
}

// TestReadYourDeletes: a transaction's own delete hides the key, and its
// own later write shows again, over committed versions of the key (one
// delete then insert of a row, as sysbench's oltp_write_only does), in
// each column family on its own.
func TestReadYourDeletes(t *testing.T) {
	e := openMem(t, kinds[0])
	cf, err := e.db.CreateColumnFamily("other")
	require.NoError(t, err)
	for i := range 3 { // versions of "k" under the transaction's reads
		w := begin(t, e.db)
		require.NoError(t, w.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte(fmt.Sprint("v", i))))
		require.NoError(t, w.Put(bg, cf, []byte("k"), []byte("other")))
		require.NoError(t, w.Commit())
	}
	txn := begin(t, e.db)
	require.NoError(t, txn.Delete(bg, txnlock.DefaultColumnFamily, []byte("k")))
	require.Equal(t, "<none>", get(t, txn, "k"), "own delete hides the committed versions")
	v, found, err := txn.Get(cf, []byte("k"))
	require.NoError(t, err)
	require.True(t, found, "the same key in another column family is not deleted")
	require.Equal(t, "other", string(v))
	require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("again")))
	require.Equal(t, "again", get(t, txn, "k"), "own write after own delete")
	require.NoError(t, txn.Delete(bg, txnlock.DefaultColumnFamily, []byte("k")))
	require.Equal(t, "<none>", get(t, txn, "k"))
	require.NoError(t, txn.Commit())
	require.Equal(t, "<none>", get(t, begin(t, e.db), "k"))
}

func TestRollbackDiscards(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t0 := begin(t, e.db)
			require.NoError(t, t0.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("old")))
			require.NoError(t, t0.Commit())
			t1 := begin(t, e.db)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("new")))
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("c"), []byte("x")))
			require.NoError(t, t1.Rollback())
			t2 := begin(t, e.db)
			require.Equal(t, "old", get(t, t2, "a"))
			require.Equal(t, "<none>", get(t, t2, "c"))
			// Rollback released the locks: t2 can take them at once.
			t2.timeout = txnlock.NoWait
			require.NoError(t, t2.Put(bg, txnlock.DefaultColumnFamily, []byte("a"), []byte("t2")))
			require.NoError(t, t2.Commit())
			require.Empty(t, e.mgr.Status().Locks)
		})
	}
}

// A conflicting GetForUpdate waits (seen in Status) and, once the holder
// commits, proceeds and reads the holder's write.
func TestGetForUpdateWaitsForHolder(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t1, t2 := begin(t, e.db), begin(t, e.db)
			_, _, err := t1.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Exclusive)
			require.NoError(t, err)
			type result struct {
				v   string
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, _, err := t2.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Exclusive)
				done <- result{string(v), err}
			}()
			w := waitForWaiter(t, e.mgr, t2.ID())
			require.Equal(t, []txnlock.TxnID{t1.ID()}, w.Blockers)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("from t1")))
			require.NoError(t, t1.Commit())
			r := <-done
			require.NoError(t, r.err)
			require.Equal(t, "from t1", r.v)
			require.NoError(t, t2.Commit())
		})
	}
}

// Shared GetForUpdate locks coexist; an exclusive one waits for both.
func TestGetForUpdateShared(t *testing.T) {
	e := openMem(t, kindPoint)
	t1, t2, t3 := begin(t, e.db), begin(t, e.db), begin(t, e.db)
	for _, txn := range []*Txn{t1, t2} {
		_, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Shared)
		require.NoError(t, err)
	}
	t3.timeout = txnlock.NoWait
	_, _, err := t3.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Exclusive)
	require.ErrorIs(t, err, txnlock.ErrLockNoWait)
	require.NoError(t, t1.Commit())
	require.NoError(t, t2.Rollback())
	_, _, err = t3.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Exclusive)
	require.NoError(t, err)
}

// A held lock in a covering mode is not sent again; LockRequests counts
// what was sent.
func TestLockRequestsDedup(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			txn := begin(t, e.db)
			k := []byte("k")
			steps := []struct {
				do   func() error
				want int
			}{
				{func() error {
					_, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, k, txnlock.Shared)
					return err
				}, 1},
				{func() error {
					_, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, k, txnlock.Shared)
					return err
				}, 1},
				{func() error {
					_, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, k, txnlock.Exclusive)
					return err
				}, 2}, // upgrade
				{func() error { return txn.Put(bg, txnlock.DefaultColumnFamily, k, []byte("v")) }, 2},
				{func() error { return txn.Delete(bg, txnlock.DefaultColumnFamily, k) }, 2},
				{func() error {
					_, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, k, txnlock.Shared)
					return err
				}, 2},
				{func() error { return txn.Put(bg, txnlock.DefaultColumnFamily, []byte("other"), nil) }, 3},
				{func() error { return txn.PutUntracked(txnlock.DefaultColumnFamily, []byte("untracked"), nil) }, 3},
			}
			for i, s := range steps {
				require.NoError(t, s.do(), "step %d", i)
				require.Equal(t, s.want, txn.LockRequests(), "step %d", i)
			}
			if kind == kindRange {
				r, _ := txnlock.Inclusive([]byte("m"), []byte("p"))
				require.NoError(t, txn.LockRange(bg, txnlock.DefaultColumnFamily, r, txnlock.Exclusive))
				require.Equal(t, 4, txn.LockRequests())
				require.NoError(t, txn.Put(bg, txnlock.DefaultColumnFamily, []byte("n"), nil), "inside the held range")
				sub, _ := txnlock.Inclusive([]byte("n"), []byte("o"))
				require.NoError(t, txn.LockRange(bg, txnlock.DefaultColumnFamily, sub, txnlock.Shared))
				require.Equal(t, 4, txn.LockRequests())
			}
			require.NoError(t, txn.Commit())
			require.Empty(t, e.mgr.Status().Locks, "commit released everything")
		})
	}
}

// ScanForUpdate with the range manager locks the scanned range: an insert
// into a gap waits until the scanner commits. With the point manager only
// the keys read are locked, so the insert proceeds (a phantom).
func TestScanForUpdatePhantoms(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t0 := begin(t, e.db)
			for _, k := range []string{"a", "c", "e"} {
				require.NoError(t, t0.Put(bg, txnlock.DefaultColumnFamily, []byte(k), []byte(k)))
			}
			require.NoError(t, t0.Commit())
			scan := func(txn *Txn) []string {
				var keys []string
				r, _ := txnlock.Inclusive([]byte("a"), []byte("e"))
				require.NoError(t, txn.ScanForUpdate(bg, txnlock.DefaultColumnFamily, r, txnlock.Exclusive, func(k, _ []byte) bool {
					keys = append(keys, string(k))
					return true
				}))
				return keys
			}
			t1, t2 := begin(t, e.db), begin(t, e.db)
			require.Equal(t, []string{"a", "c", "e"}, scan(t1))
			if kind == kindPoint {
				t2.timeout = txnlock.NoWait
				require.NoError(t, t2.Put(bg, txnlock.DefaultColumnFamily, []byte("b"), []byte("b")), "point locking: the gap is free")
				require.NoError(t, t2.Commit())
				require.Equal(t, []string{"a", "b", "c", "e"}, scan(t1), "phantom")
				require.NoError(t, t1.Commit())
				return
			}
			done := make(chan error, 1)
			go func() {
				err := t2.Put(bg, txnlock.DefaultColumnFamily, []byte("b"), []byte("b"))
				if err == nil {
					err = t2.Commit()
				}
				done <- err
			}()
			waitForWaiter(t, e.mgr, t2.ID())
			require.Equal(t, []string{"a", "c", "e"}, scan(t1), "no phantom while t1 holds the range")
			require.NoError(t, t1.Commit())
			require.NoError(t, <-done)
			require.Equal(t, "b", get(t, begin(t, e.db), "b"))
		})
	}
}

func TestColumnFamilies(t *testing.T) {
	e := openMem(t, kindPoint)
	a, err := e.db.CreateColumnFamily("a")
	require.NoError(t, err)
	again, err := e.db.CreateColumnFamily("a")
	require.NoError(t, err)
	require.Equal(t, a, again)
	b, err := e.db.CreateColumnFamily("b")
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.NotEqual(t, txnlock.DefaultColumnFamily, a)
	got, ok := e.db.ColumnFamily("b")
	require.True(t, ok)
	require.Equal(t, b, got)
	_, ok = e.db.ColumnFamily("c")
	require.False(t, ok)
	require.Equal(t, map[string]txnlock.ColumnFamily{DefaultColumnFamilyName: txnlock.DefaultColumnFamily, "a": a, "b": b}, e.db.ColumnFamilies())
	t1, t2 := begin(t, e.db), begin(t, e.db)
	require.NoError(t, t1.Put(bg, a, []byte("k"), []byte("in a")))
	t2.timeout = txnlock.NoWait
	require.NoError(t, t2.Put(bg, b, []byte("k"), []byte("in b")), "same key, other column family: no conflict")
	require.ErrorIs(t, t2.Put(bg, a, []byte("k"), nil), txnlock.ErrLockNoWait)
	require.NoError(t, t1.Commit())
	require.NoError(t, t2.Commit())
	t3 := begin(t, e.db)
	for cf, want := range map[txnlock.ColumnFamily]string{a: "in a", b: "in b", txnlock.DefaultColumnFamily: "<none>"} {
		v, found, err := t3.Get(cf, []byte("k"))
		require.NoError(t, err)
		got := "<none>"
		if found {
			got = string(v)
		}
		require.Equal(t, want, got)
	}
	// Scans stay inside their column family.
	n := 0
	require.NoError(t, t3.Scan(a, txnlock.All(), func(_, _ []byte) bool { n++; return true }))
	require.Equal(t, 1, n)
	_, err = e.db.CreateColumnFamily("")
	require.ErrorIs(t, err, ErrColumnFamilyName)
	require.ErrorContains(t, err, "pebbletxn: create column family: invalid column family name")
	_, _, err = t3.Get(b+1, []byte("k"))
	require.ErrorIs(t, err, txnlock.ErrUnknownColumnFamily)
	require.EqualError(t, err, fmt.Sprintf("pebbletxn: get %v: unknown column family: %v", t3.ID(), b+1))
	require.ErrorIs(t, t3.Put(bg, -1, []byte("k"), nil), txnlock.ErrUnknownColumnFamily)
	require.ErrorIs(t, t3.Lock(bg, b+1, []byte("k"), txnlock.Shared), txnlock.ErrUnknownColumnFamily)
	snap, err := e.db.NewSnapshot()
	require.NoError(t, err)
	defer snap.Close()
	_, _, err = snap.Get(b+1, []byte("k"))
	require.ErrorIs(t, err, txnlock.ErrUnknownColumnFamily)
	wb := e.db.NewWriteBatch()
	defer wb.Close()
	require.ErrorIs(t, wb.Put(b+1, []byte("k"), nil), txnlock.ErrUnknownColumnFamily)
}

func TestBadInput(t *testing.T) {
	_, err := New(nil, Options{LockTimeout: -5})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	var oe *txnlock.OptionsError
	require.ErrorAs(t, err, &oe)
	require.Len(t, oe.Problems, 3, "every problem reported: %v", oe.Problems)

	e := openMem(t, kindPoint)
	_, err = e.db.Begin(&TxnOptions{Durability: 9})
	require.ErrorIs(t, err, txnlock.ErrInvalidOptions)
	txn := begin(t, e.db)
	require.ErrorIs(t, txn.Lock(bg, txnlock.DefaultColumnFamily, []byte("k"), 0), txnlock.ErrInvalidMode)
	r, _ := txnlock.Inclusive([]byte("a"), []byte("b"))
	require.ErrorIs(t, txn.LockRange(bg, txnlock.DefaultColumnFamily, r, txnlock.Exclusive), txnlock.ErrRangeNotSupported)
	require.ErrorIs(t, txn.LockRange(bg, txnlock.DefaultColumnFamily, txnlock.Range{}, txnlock.Exclusive), txnlock.ErrInvalidRange)
	require.ErrorIs(t, txn.Unlock(txnlock.DefaultColumnFamily, []byte("never")), txnlock.ErrNotHeld)
	require.Zero(t, txn.LockRequests())
	snap, err := e.db.NewSnapshot()
	require.NoError(t, err)
	err = snap.Scan(txnlock.DefaultColumnFamily, txnlock.Range{}, nil)
	require.ErrorIs(t, err, txnlock.ErrInvalidRange)
	require.EqualError(t, err, "pebbletxn: snapshot scan: invalid range", "operation first")
	_, _, _, err = snap.Last(txnlock.DefaultColumnFamily, txnlock.Range{})
	require.EqualError(t, err, "pebbletxn: snapshot last: invalid range", "operation first")
	require.NoError(t, snap.Close())
	require.NoError(t, txn.Commit())

	ops := map[string]func(*Txn) error{
		"get": func(x *Txn) error { _, _, err := x.Get(txnlock.DefaultColumnFamily, []byte("k")); return err },
		"gfu": func(x *Txn) error {
			_, _, err := x.GetForUpdate(bg, txnlock.DefaultColumnFamily, []byte("k"), txnlock.Shared)
			return err
		},
		"put":    func(x *Txn) error { return x.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), nil) },
		"delete": func(x *Txn) error { return x.Delete(bg, txnlock.DefaultColumnFamily, []byte("k")) },
		"scan":   func(x *Txn) error { return x.Scan(txnlock.DefaultColumnFamily, txnlock.All(), nil) },
		"scanfu": func(x *Txn) error {
			return x.ScanForUpdate(bg, txnlock.DefaultColumnFamily, txnlock.All(), txnlock.Shared, nil)
		},
		"commit":   func(x *Txn) error { return x.Commit() },
		"rollback": func(x *Txn) error { return x.Rollback() },
	}
	for name, op := range ops {
		require.ErrorIs(t, op(txn), ErrTxnDone, "%s after commit", name)
	}
	rolled := begin(t, e.db)
	require.NoError(t, rolled.Rollback())
	for name, op := range ops {
		require.ErrorIs(t, op(rolled), ErrTxnDone, "%s after rollback", name)
	}
}

func TestClosedDB(t *testing.T) {
	e := openMem(t, kindPoint)
	open := begin(t, e.db)
	require.NoError(t, open.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("v")))
	require.NotEmpty(t, e.mgr.Status().Locks)
	require.NoError(t, e.db.Close())
	require.Empty(t, e.mgr.Status().Locks, "Close released the open transaction's locks")
	_, err := e.db.Begin(nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, txnlock.ErrClosed)
	_, _, err = open.Get(txnlock.DefaultColumnFamily, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, open.Put(bg, txnlock.DefaultColumnFamily, []byte("j"), nil), ErrClosed)
	require.ErrorIs(t, open.Commit(), ErrClosed)
	require.ErrorIs(t, e.db.Close(), ErrClosed)
	_, err = e.db.NewSnapshot()
	require.ErrorIs(t, err, ErrClosed)
	// Nothing was applied.
	_, _, err = e.pdb.Get(append(cfPrefix(0), 'k'))
	require.True(t, errors.Is(err, errNotFound()), fmt.Sprint(err))
}

// A wait ended by its context returns the context's error and leaves the
// transaction holding only what it held before.
func TestLockWaitCanceled(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t1, t2 := begin(t, e.db), begin(t, e.db)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("1")))
			require.NoError(t, t2.Put(bg, txnlock.DefaultColumnFamily, []byte("j"), []byte("2")))
			ctx, cancel := context.WithCancel(bg)
			done := make(chan error, 1)
			go func() { done <- t2.Put(ctx, txnlock.DefaultColumnFamily, []byte("k"), []byte("2")) }()
			waitForWaiter(t, e.mgr, t2.ID())
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			held := map[string]txnlock.TxnID{}
			for _, l := range e.mgr.Status().Locks {
				k, _ := l.Range.PointKey()
				held[string(k)] = l.Holders[0]
			}
			require.Equal(t, map[string]txnlock.TxnID{"k": t1.ID(), "j": t2.ID()}, held)
			require.NoError(t, t2.Commit(), "the transaction is still usable")
			require.Equal(t, "2", get(t, t1, "j"), "t2's committed write")
			require.Equal(t, "1", get(t, t1, "k"), "t1's own write, not t2's canceled one")
			require.NoError(t, t1.Commit())
		})
	}
}

// Close while a transaction waits: Close releases the holder's locks, the
// waiter is granted, sees the DB closed, releases what it holds and
// returns ErrClosed. The manager ends with no locks.
func TestCloseWhileWaiting(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			e := openMem(t, kind)
			t1, t2 := begin(t, e.db), begin(t, e.db)
			require.NoError(t, t1.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("1")))
			require.NoError(t, t2.Put(bg, txnlock.DefaultColumnFamily, []byte("j"), []byte("2")))
			done := make(chan error, 1)
			go func() { done <- t2.Put(bg, txnlock.DefaultColumnFamily, []byte("k"), []byte("2")) }()
			waitForWaiter(t, e.mgr, t2.ID())
			require.NoError(t, e.db.Close())
			require.ErrorIs(t, <-done, ErrClosed)
			require.Empty(t, e.mgr.Status().Locks)
			require.Empty(t, e.mgr.Status().Waits)
		})
	}
}
