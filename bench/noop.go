package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
)

// OpenNoop opens a table that stores nothing and takes no locks: every
// statement succeeds at once and affects one row. Running a workload
// against it measures the driver's own cost per transaction (random
// values, timing, accounting), so that reports can show how much of a
// transaction's time is the lock manager's.
func OpenNoop(_ context.Context, cfg TableConfig) (DB, error) {
	db := &noopDB{rows: int64(cfg.TableSize) * int64(max(cfg.Tables, 1)), firstID: int64(cfg.TableSize)}
	db.nextID.Store(db.firstID)
	return db, nil
}

type noopDB struct {
	rows    int64 // rows after prepare
	firstID int64 // InsertAuto ids start after it
	nextID  atomic.Int64
}

func (db *noopDB) Begin() Tx { return &noopTx{db: db} }
func (db *noopDB) Verify() (VerifyReport, error) {
	return VerifyReport{Rows: db.rows + db.nextID.Load() - db.firstID}, nil
}
func (db *noopDB) LockStats() txnlock.Stats     { return txnlock.Stats{} }
func (db *noopDB) DeadlockStats() DeadlockStats { return DeadlockStats{} }
func (db *noopDB) Close() error                 { return nil }

type noopTx struct{ db *noopDB }

func (*noopTx) PointSelect(context.Context, int, int64) (int, error) { return 1, nil }
func (*noopTx) RangeSelect(_ context.Context, _ int, lo, hi int64, _ bool) (int, error) {
	return int(hi - lo + 1), nil
}
func (*noopTx) UpdateIndex(context.Context, int, int64) (int, error)            { return 1, nil }
func (*noopTx) UpdateNonIndex(context.Context, int, int64, string) (int, error) { return 1, nil }
func (*noopTx) Delete(context.Context, int, int64) (int, error)                 { return 1, nil }
func (*noopTx) Insert(context.Context, int, int64, int64, string, string) error { return nil }
func (tx *noopTx) InsertAuto(context.Context, int, int64, string, string) (int64, error) {
	return tx.db.nextID.Add(1), nil
}
func (*noopTx) Commit() error           { return nil }
func (*noopTx) Rollback() error         { return nil }
func (*noopTx) LockRequests() int       { return 0 }
func (*noopTx) LockTime() time.Duration { return 0 }
