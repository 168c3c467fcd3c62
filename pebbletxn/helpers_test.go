package pebbletxn

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// managerKind names a lock manager the tests run against.
type managerKind string

const (
	kindPoint managerKind = "point"
	kindRange managerKind = "range"
)

var kinds = []managerKind{kindPoint, kindRange}

// newManager returns a fresh manager of kind with lock timeout lt, closed
// at the end of the test.
func newManager(t testing.TB, kind managerKind, lt time.Duration, det txnlock.Detector) txnlock.Manager {
	t.Helper()
	wo := txnlock.WaitOptions{LockTimeout: lt, Detector: det}
	var m txnlock.Manager
	var err error
	switch kind {
	case kindPoint:
		m, err = pointlock.New(pointlock.Options{WaitOptions: wo})
	case kindRange:
		m, err = rangelock.New(rangelock.Options{WaitOptions: wo})
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

type testEnv struct {
	pdb *pebble.DB
	db  *DB
	mgr txnlock.Manager
}

// openMem opens an in-memory DB on a fresh manager of kind.
func openMem(t testing.TB, kind managerKind) *testEnv {
	t.Helper()
	return openMemWith(t, kind, newManager(t, kind, 0, nil))
}

// openMemWith opens an in-memory DB on mgr, a manager of kind.
func openMemWith(t testing.TB, kind managerKind, mgr txnlock.Manager) *testEnv {
	t.Helper()
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{}})
	require.NoError(t, err)
	db, err := New(pdb, Options{Manager: mgr, RangeLocking: kind != kindPoint})
	require.NoError(t, err)
	t.Cleanup(func() {
		db.Close()
		pdb.Close()
	})
	return &testEnv{pdb: pdb, db: db, mgr: mgr}
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, a ...any) {
	panic(f)
}

// waitForWaiter polls the manager's Status until txn waits, and fails the
// test if it does not within 10 s. It observes the wait; it never sleeps
// to make one happen.
func waitForWaiter(t testing.TB, m txnlock.Manager, txn txnlock.TxnID) txnlock.WaitStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, w := range m.Status().Waits {
			if w.Txn == txn {
				return w
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%v never waited; status:\n%v", txn, m.Status())
	return txnlock.WaitStatus{}
}

func begin(t testing.TB, db *DB) *Txn {
	t.Helper()
	txn, err := db.Begin(nil)
	require.NoError(t, err)
	return txn
}

func get(t testing.TB, txn *Txn, key string) string {
	t.Helper()
	v, found, err := txn.Get(txnlock.DefaultColumnFamily, []byte(key))
	require.NoError(t, err)
	if !found {
		return "<none>"
	}
	return string(v)
}

var bg = context.Background()

func errNotFound() error { return pebble.ErrNotFound }
