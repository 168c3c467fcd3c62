package sbtest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pebbletxn"
)

// DB is N sbtest tables in one Pebble DB, with transactions from pebbletxn
// and locks from a txnlock manager. It is safe for concurrent use; a Tx is
// not.
type DB struct {
	opts   Options
	pdb    *pebble.DB
	tdb    *pebbletxn.DB
	mgr    txnlock.Manager
	closer []func() error // what Open made, closed in reverse order
	tables []*table       // index 0 unused: tables are 1..N
	// lockCF is where table and AUTO-INC locks live (default CF).
	lockCF txnlock.ColumnFamily
	closed atomic.Bool
}

// table is one sbtestN. Immutable after Open except the auto-increment
// counter.
type table struct {
	n        int
	pk, sk   txnlock.ColumnFamily
	hasSK    bool // false with NoSK: no k_1 entries
	pkPrefix []byte
	skPrefix []byte
	tableKey []byte // table lock key
	aiKey    []byte // AUTO-INC lock key

	// aiMu guards aiNext in AutoIncMode 0 and 1; mode 2 uses aiAtomic.
	aiMu     sync.Mutex
	aiNext   int64
	aiAtomic atomic.Int64
}

// Open opens (or creates) the tables. On disk, existing rows are kept and
// the auto-increment counters start after the greatest id; reopen with the
// Layout and NoSK the tables were made with (the layout decides which
// column family, and so which key prefix, a table lives in).
func Open(opts Options) (*DB, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db := &DB{opts: opts}
	ok := false
	defer func() {
		if !ok {
			db.closeAll()
		}
	}()
	mgr, closers, err := newManager(opts)
	if err != nil {
		return nil, err
	}
	db.mgr = mgr
	db.closer = append(db.closer, closers...)

	po := &pebble.Options{CacheSize: opts.CacheSize, MemTableSize: opts.MemTableSize, FS: opts.FS}
	if po.FS == nil && opts.Dir == "" {
		po.FS = vfs.NewMem()
	}
	if !opts.PebbleLogger {
		po.Logger = quietLogger{}
		po.EventListener = &pebble.EventListener{}
	}
	// pebbletxn.Open refuses a damaged directory and turns Pebble's fatal
	// errors into errors where it can; its Close closes the Pebble DB.
	tdb, err := pebbletxn.Open(opts.Dir, pebbletxn.OpenOptions{
		Options: pebbletxn.Options{
			Manager:      mgr,
			RangeLocking: opts.Lock == LockRange,
			Sync:         opts.Sync,
		},
		Pebble: po,
	})
	if err != nil {
		return nil, err
	}
	db.tdb = tdb
	db.pdb = tdb.Pebble()
	db.closer = append(db.closer, tdb.Close)
	db.lockCF = txnlock.DefaultColumnFamily
	db.tables = make([]*table, opts.Tables+1)
	for n := 1; n <= opts.Tables; n++ {
		if db.tables[n], err = db.openTable(n); err != nil {
			return nil, err
		}
	}
	ok = true
	return db, nil
}

func (db *DB) openTable(n int) (*table, error) {
	t := &table{
		n:        n,
		pkPrefix: tablePrefix(n, pkTag),
		skPrefix: tablePrefix(n, skTag),
		tableKey: lockKey("table", n),
		aiKey:    lockKey("autoinc", n),
	}
	var err error
	switch db.opts.Layout {
	case LayoutShared:
		t.pk = txnlock.DefaultColumnFamily
		t.sk = t.pk
	case LayoutPerTable:
		t.pk, err = db.tdb.CreateColumnFamily(fmt.Sprintf("sbtest%d", n))
		t.sk = t.pk
	case LayoutPerIndex:
		t.pk, err = db.tdb.CreateColumnFamily(fmt.Sprintf("sbtest%d.PRIMARY", n))
		if err == nil && !db.opts.NoSK {
			t.sk, err = db.tdb.CreateColumnFamily(fmt.Sprintf("sbtest%d.k_1", n))
		}
	}
	if err != nil {
		return nil, err
	}
	t.hasSK = !db.opts.NoSK
	// Auto-increment starts after the greatest id.
	snap, err := db.tdb.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	key, _, found, err := snap.Last(t.pk, txnlock.Prefix(t.pkPrefix))
	if err != nil {
		return nil, err
	}
	next := int64(1)
	if found {
		next = readInt(key[len(t.pkPrefix):]) + 1
	}
	t.aiNext = next
	t.aiAtomic.Store(next - 1)
	return t, nil
}

// table returns table n or ErrUnknownTable.
func (db *DB) table(n int) (*table, error) {
	if n < 1 || n >= len(db.tables) {
		return nil, &opError{op: fmt.Sprintf("table sbtest%d", n), err: fmt.Errorf("%w (tables are 1..%d)", ErrUnknownTable, len(db.tables)-1)}
	}
	return db.tables[n], nil
}

// Options returns the options the DB runs with (defaults filled).
func (db *DB) Options() Options { return db.opts }

// Manager returns the lock manager.
func (db *DB) Manager() txnlock.Manager { return db.mgr }

// LockStats returns the lock manager's counters.
func (db *DB) LockStats() txnlock.Stats { return db.mgr.Stats() }

// TxnDB returns the pebbletxn DB underneath.
func (db *DB) TxnDB() *pebbletxn.DB { return db.tdb }

// Close rolls back open transactions and closes what Open made: the
// pebbletxn DB, the Pebble DB, and the manager and detector unless the
// caller supplied them. A second Close returns ErrClosed.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return &opError{op: "close", err: ErrClosed}
	}
	return db.closeAll()
}

func (db *DB) closeAll() error {
	var errs []error
	for i := len(db.closer) - 1; i >= 0; i-- {
		if err := db.closer[i](); err != nil && !errors.Is(err, txnlock.ErrClosed) {
			errs = append(errs, err)
		}
	}
	db.closer = nil
	return errors.Join(errs...)
}

// quietLogger drops Pebble's informational logs and keeps its errors off
// stderr as well. pebbletxn.Open handles fatal errors with a logger of its
// own, which passes Infof and Errorf on to this one.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
