package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
)

// fakeDB is a map-backed table for the driver's tests: statements apply
// to rows under one mutex (no locks, no waits), each takes the lock
// requests sbtest's point locking would, and faults can be injected per
// statement kind.
type fakeDB struct {
	cfg TableConfig

	// mu guards the rows, the id counter and the call counts.
	mu struct {
		sync.Mutex
		rows   []map[int64]int64 // per table: id -> k
		nextID int64
		calls  [numStmtKinds]int // statements started, by kind
		opened int
	}
	// fault, if set, is asked before every statement with the kind and
	// its 1-based call number; a non-nil error fails the statement.
	fault func(k stmtKind, n int) error
	// dupAutoInc makes InsertAuto hand out every id twice (a broken
	// auto-increment, to show the slap row check can fail).
	dupAutoInc bool
	// skipAutoInc makes InsertAuto skip an id before every id it hands
	// out (an auto-increment with gaps).
	skipAutoInc bool
	det         DeadlockStats
	detGrowth   DeadlockStats
}

func newFakeDB(cfg TableConfig) *fakeDB {
	db := &fakeDB{cfg: cfg}
	db.mu.rows = make([]map[int64]int64, max(cfg.Tables, 1)+1)
	for t := 1; t < len(db.mu.rows); t++ {
		db.mu.rows[t] = make(map[int64]int64)
		for id := int64(1); id <= int64(cfg.TableSize); id++ {
			db.mu.rows[t][id] = id
		}
	}
	db.mu.nextID = int64(cfg.TableSize)
	return db
}

// fakeOpener opens fake tables and records the order of the opens.
type fakeOpener struct {
	mu     sync.Mutex
	opened []TableConfig
	setup  func(db *fakeDB)
}

func (o *fakeOpener) open(_ context.Context, cfg TableConfig) (DB, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened = append(o.opened, cfg)
	db := newFakeDB(cfg)
	if o.setup != nil {
		o.setup(db)
	}
	return db, nil
}

func (db *fakeDB) Begin() Tx                { return &fakeTx{db: db} }
func (db *fakeDB) LockStats() txnlock.Stats { return txnlock.Stats{} }

// DeadlockStats returns det, and then det plus detGrowth on every later
// call: a detector whose counters move while a run goes on.
func (db *fakeDB) DeadlockStats() DeadlockStats {
	db.mu.Lock()
	defer db.mu.Unlock()
	d := db.det
	db.det.Trips += db.detGrowth.Trips
	db.det.Deferred += db.detGrowth.Deferred
	return d
}
func (db *fakeDB) Close() error { return nil }

func (db *fakeDB) Verify() (VerifyReport, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var v VerifyReport
	for _, rows := range db.mu.rows[1:] {
		v.Rows += int64(len(rows))
	}
	return v, nil
}

// fakeTx buffers nothing: statements apply at once (the driver's tests
// need counts, not isolation).
type fakeTx struct {
	db    *fakeDB
	locks map[string]bool
}

// stmt counts a statement, takes its lock, and asks the fault hook.
func (tx *fakeTx) stmt(k stmtKind, table int, id int64) error {
	tx.db.mu.Lock()
	tx.db.mu.calls[k]++
	n := tx.db.mu.calls[k]
	tx.db.mu.Unlock()
	if tx.db.fault != nil {
		if err := tx.db.fault(k, n); err != nil {
			return err
		}
	}
	if k.class() == classWrite && tx.db.cfg.Lock != LockNone {
		if tx.locks == nil {
			tx.locks = make(map[string]bool)
		}
		tx.locks[fmt.Sprint(table, "/", id)] = true
	}
	return nil
}

func (tx *fakeTx) PointSelect(_ context.Context, t int, id int64) (int, error) {
	if err := tx.stmt(stmtPointSelect, t, id); err != nil {
		return 0, err
	}
	return 1, nil
}

func (tx *fakeTx) RangeSelect(_ context.Context, t int, lo, hi int64, _ bool) (int, error) {
	if err := tx.stmt(stmtSimpleRange, t, lo); err != nil {
		return 0, err
	}
	tx.db.mu.Lock()
	defer tx.db.mu.Unlock()
	n := 0
	for id := range tx.db.mu.rows[t] {
		if id >= lo && id <= hi {
			n++
		}
	}
	return n, nil
}

func (tx *fakeTx) UpdateIndex(_ context.Context, t int, id int64) (int, error) {
	return tx.update(stmtUpdateIndex, t, id)
}

func (tx *fakeTx) UpdateNonIndex(_ context.Context, t int, id int64, _ string) (int, error) {
	return tx.update(stmtUpdateNonIndex, t, id)
}

func (tx *fakeTx) update(k stmtKind, t int, id int64) (int, error) {
	if err := tx.stmt(k, t, id); err != nil {
		return 0, err
	}
	tx.db.mu.Lock()
	defer tx.db.mu.Unlock()
	if _, ok := tx.db.mu.rows[t][id]; !ok {
		return 0, nil
	}
	tx.db.mu.rows[t][id]++
	return 1, nil
}

func (tx *fakeTx) Delete(_ context.Context, t int, id int64) (int, error) {
	if err := tx.stmt(stmtDelete, t, id); err != nil {
		return 0, err
	}
	tx.db.mu.Lock()
	defer tx.db.mu.Unlock()
	if _, ok := tx.db.mu.rows[t][id]; !ok {
		return 0, nil
	}
	delete(tx.db.mu.rows[t], id)
	return 1, nil
}

func (tx *fakeTx) Insert(_ context.Context, t int, id, k int64, _, _ string) error {
	if err := tx.stmt(stmtInsert, t, id); err != nil {
		return err
	}
	tx.db.mu.Lock()
	defer tx.db.mu.Unlock()
	// The fake takes no locks: another thread may have re-inserted the id
	// after this transaction deleted it. Overwrite rather than fail.
	tx.db.mu.rows[t][id] = k
	return nil
}

func (tx *fakeTx) InsertAuto(_ context.Context, t int, k int64, _, _ string) (int64, error) {
	tx.db.mu.Lock()
	id := tx.db.mu.nextID + 1
	if tx.db.skipAutoInc {
		id++
		tx.db.mu.nextID++
	}
	if !tx.db.dupAutoInc || tx.db.mu.calls[stmtInsertAuto]%2 == 1 {
		tx.db.mu.nextID++
	}
	tx.db.mu.Unlock()
	if err := tx.stmt(stmtInsertAuto, t, id); err != nil {
		return 0, err
	}
	tx.db.mu.Lock()
	defer tx.db.mu.Unlock()
	tx.db.mu.rows[t][id] = k
	return id, nil
}

func (tx *fakeTx) Commit() error           { return nil }
func (tx *fakeTx) Rollback() error         { return nil }
func (tx *fakeTx) LockRequests() int       { return len(tx.locks) }
func (tx *fakeTx) LockTime() time.Duration { return time.Duration(len(tx.locks)) * time.Microsecond }
