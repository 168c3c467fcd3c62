package bench

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/bench/sbtest"
	"github.com/txnlock/txnlock/deadlock"
)

// OpenSBTest opens a fresh bench/sbtest table on Pebble (in memory, or in
// a new directory under cfg.Dir that Close removes), with one deadlock
// detector (package deadlock, default options: on-block search, breaker
// Defer) shared by the table's lock managers, and prepares its rows.
func OpenSBTest(ctx context.Context, cfg TableConfig) (DB, error) {
	det, err := deadlock.New(deadlock.Options{})
	if err != nil {
		return nil, err
	}
	dir := ""
	if cfg.Storage == StorageDisk {
		if dir, err = os.MkdirTemp(cfg.Dir, "lockbench-"); err != nil {
			det.Close()
			return nil, err
		}
	}
	db, err := sbtest.Open(sbtest.Options{
		Tables: cfg.Tables, TableSize: cfg.TableSize, Layout: cfg.Layout, NoSK: cfg.NoSK,
		Dir: dir, Sync: cfg.Sync, Lock: cfg.Lock, AutoIncMode: cfg.AutoIncMode,
		LockTimeout: cfg.LockTimeout, Detector: det, TimeLocks: cfg.TimeLocks,
	})
	if err != nil {
		det.Close()
		removeDir(dir)
		return nil, err
	}
	s := &sbDB{db: db, det: det, dir: dir}
	if err := db.Prepare(ctx); err != nil {
		s.Close()
		return nil, &opError{op: "prepare", err: err}
	}
	return s, nil
}

func removeDir(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

type sbDB struct {
	db  *sbtest.DB
	det *deadlock.Detector
	dir string // "" in memory
}

func (s *sbDB) Begin() Tx                { return sbTx{s.db.Begin()} }
func (s *sbDB) LockStats() txnlock.Stats { return s.db.LockStats() }

func (s *sbDB) DeadlockStats() DeadlockStats {
	st := s.det.Stats()
	return DeadlockStats{Deadlocks: st.Deadlocks, Trips: st.Trips, Deferred: st.Deferred, Assumed: st.Assumed}
}

// Verify maps sbtest's report: an inconsistent table is a report with
// problems, not an error. Ids are keys in sbtest, so they cannot repeat.
func (s *sbDB) Verify() (VerifyReport, error) {
	rep, err := s.db.Verify()
	out := VerifyReport{Rows: rep.Rows, Problems: rep.Problems}
	if err != nil && !errors.Is(err, sbtest.ErrInconsistent) {
		return out, err
	}
	if !rep.OK() && len(out.Problems) == 0 {
		out.Problems = []string{rep.String()}
	}
	return out, nil
}

func (s *sbDB) Close() error {
	err := s.db.Close()
	s.det.Close()
	removeDir(s.dir)
	return err
}

type sbTx struct{ tx *sbtest.Tx }

func (t sbTx) PointSelect(ctx context.Context, table int, id int64) (int, error) {
	_, ok, err := t.tx.PointSelect(ctx, table, id)
	return b2i(ok), err
}

func (t sbTx) RangeSelect(ctx context.Context, table int, lo, hi int64, forUpdate bool) (int, error) {
	rows, err := t.tx.RangeSelect(ctx, table, lo, hi, forUpdate)
	return len(rows), err
}

func (t sbTx) UpdateIndex(ctx context.Context, table int, id int64) (int, error) {
	return t.tx.UpdateIndex(ctx, table, id)
}

func (t sbTx) UpdateNonIndex(ctx context.Context, table int, id int64, c string) (int, error) {
	return t.tx.UpdateNonIndex(ctx, table, id, c)
}

func (t sbTx) Delete(ctx context.Context, table int, id int64) (int, error) {
	return t.tx.Delete(ctx, table, id)
}

func (t sbTx) Insert(ctx context.Context, table int, id, k int64, c, pad string) error {
	return t.tx.Insert(ctx, table, sbtest.Row{ID: id, K: k, C: c, Pad: pad})
}

func (t sbTx) InsertAuto(ctx context.Context, table int, k int64, c, pad string) (int64, error) {
	return t.tx.InsertAuto(ctx, table, k, c, pad)
}

func (t sbTx) Commit() error           { return t.tx.Commit() }
func (t sbTx) Rollback() error         { return t.tx.Rollback() }
func (t sbTx) LockRequests() int       { return t.tx.LockRequests() }
func (t sbTx) LockTime() time.Duration { return t.tx.LockTime() }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
