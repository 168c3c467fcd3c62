package pebbletxn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// DB runs pessimistic transactions over a *pebble.DB. It is safe for
// concurrent use; a Txn is not (one goroutine per transaction).
//
// The DB owns the whole key space of the Pebble DB (its column families'
// keys and its own records) but not the lock manager, nor the Pebble DB given to New: Close
// ends the DB's transactions and leaves them open for the caller to close.
// The Pebble DB that Open opened is the DB's, and Close closes it.
type DB struct {
	pdb  *pebble.DB
	opts Options

	// mu guards closed and the lifetime of pdb as seen through this DB:
	// every Pebble access holds mu.RLock and checks closed; Close takes
	// mu.Lock, so it waits for in-flight reads and commits.
	//
	// Lock order: mu, then cfMu, then txnMu. Manager.Lock (which may wait)
	// is never called with any of them held; the non-blocking
	// Manager.AddColumnFamily is called under cfMu.
	mu     sync.RWMutex
	closed bool
	// closedFlag mirrors closed (set under mu.Lock) for the checks around
	// every lock request, which need no Pebble access and so no RLock: a
	// contended reader count would cost more than the lock request.
	closedFlag atomic.Bool
	// fatal holds the first fatal Pebble error a call recovered; set once.
	fatal fatalState
	// ownsPebble: Open made pdb, so Close closes it. Immutable.
	ownsPebble bool

	// cfMu guards cfs and nextCF, and serializes the stores to ids and
	// low.
	cfMu   sync.Mutex
	cfs    map[string]txnlock.ColumnFamily
	nextCF uint32
	// ids is the set of column family ids. It is replaced, never changed,
	// under cfMu, and read without a lock by every call that takes a
	// column family; low has bit i set for each id i < 64 in it, so that
	// the check of the usual small id is one load.
	ids atomic.Pointer[map[txnlock.ColumnFamily]struct{}]
	low atomic.Uint64

	// txnMu guards txns: the open transactions, released by Close.
	txnMu sync.Mutex
	txns  map[txnlock.TxnID]*Txn
}

// DefaultColumnFamilyName is the name of txnlock.DefaultColumnFamily (id 0).
const DefaultColumnFamilyName = "default"

// nextTxnID numbers transactions process-wide, so that DBs sharing a lock
// manager or a deadlock detector never reuse an id.
var nextTxnID atomic.Uint64

// New wraps pdb, a DB of github.com/cockroachdb/pebble/v2 (import that
// path, not v1's github.com/cockroachdb/pebble; Open needs no Pebble
// import at all). It loads the column family catalog and registers every
// column family with opts.Manager (a column family the manager already has
// is accepted). It returns a *txnlock.OptionsError listing every problem
// with opts. Pebble's fatal errors go to pdb's own Logger (Pebble's
// default stops the process); Open installs one that turns them into
// errors where it can (see FatalError).
func New(pdb *pebble.DB, opts Options) (_ *DB, err error) {
	opts.EnsureDefaults()
	var p optcheck.Problems
	if pdb == nil {
		p.Addf("pebble DB is nil")
	}
	p.Merge(opts.Validate())
	if err := p.Err(); err != nil {
		return nil, err
	}
	db := &DB{
		pdb:    pdb,
		opts:   opts,
		cfs:    map[string]txnlock.ColumnFamily{DefaultColumnFamilyName: txnlock.DefaultColumnFamily},
		nextCF: 1,
		txns:   make(map[txnlock.TxnID]*Txn),
	}
	db.ids.Store(&map[txnlock.ColumnFamily]struct{}{txnlock.DefaultColumnFamily: {}})
	db.low.Store(1 << txnlock.DefaultColumnFamily)
	defer db.recoverPebble("new", 0, &err)
	if err := db.loadCatalog(); err != nil {
		return nil, err
	}
	return db, nil
}

// loadCatalog reads the persisted column families and registers them.
func (db *DB) loadCatalog() error {
	lower, upper := catalogKey(""), cfPrefix(metaID)
	upper = append(append(upper, "cf/"...), 0xff)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return storageErr("load catalog", 0, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[len(lower):])
		v := it.Value()
		if len(v) != 4 {
			return fmt.Errorf("pebbletxn: load catalog: corrupt entry for column family %q", name)
		}
		id := binary.BigEndian.Uint32(v)
		if id == 0 || id >= maxCF {
			return fmt.Errorf("pebbletxn: load catalog: corrupt id %d for column family %q", id, name)
		}
		if err := db.registerLocked(name, id); err != nil {
			return err
		}
		db.nextCF = max(db.nextCF, id+1)
	}
	return storageErr("load catalog", 0, it.Error())
}

// maxCF bounds the column family ids: below the catalog's prefix, and
// positive as a txnlock.ColumnFamily.
const maxCF = 1 << 31

// registerLocked records column family id called name and registers it with
// the manager (cfMu held, or the DB not yet shared).
func (db *DB) registerLocked(name string, id uint32) error {
	cf := txnlock.ColumnFamily(id)
	if err := db.opts.Manager.AddColumnFamily(cf); err != nil && !errors.Is(err, txnlock.ErrColumnFamilyExists) {
		return err
	}
	db.cfs[name] = cf
	ids := maps.Clone(*db.ids.Load())
	ids[cf] = struct{}{}
	db.ids.Store(&ids)
	if id < 64 {
		db.low.Store(db.low.Load() | 1<<id)
	}
	return nil
}

// CreateColumnFamily returns the id of the column family called name,
// creating it first (and persisting name → id, synced) if it does not exist
// yet; reopening the DB finds it again, so call it after every Open. Its
// locks live in the manager's column family of the same id. It fails with
// ErrColumnFamilyName for an empty name or one longer than
// MaxColumnFamilyName bytes. The default column family,
// txnlock.DefaultColumnFamily, always exists.
func (db *DB) CreateColumnFamily(name string) (_ txnlock.ColumnFamily, err error) {
	if name == "" || len(name) > MaxColumnFamilyName {
		return 0, &txnError{op: "create column family", err: fmt.Errorf("%w %q", ErrColumnFamilyName, name)}
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if err := db.checkOpenLocked("create column family", 0); err != nil {
		return 0, err
	}
	db.cfMu.Lock()
	defer db.cfMu.Unlock()
	if cf, ok := db.cfs[name]; ok {
		return cf, nil
	}
	id := db.nextCF
	if id >= maxCF {
		return 0, &txnError{op: "create column family", err: ErrTooManyColumnFamilies}
	}
	defer db.recoverPebble("create column family", 0, &err)
	if err := db.pdb.Set(catalogKey(name), binary.BigEndian.AppendUint32(nil, id), pebble.Sync); err != nil {
		return 0, storageErr("create column family", 0, err)
	}
	if err := db.registerLocked(name, id); err != nil {
		return 0, err
	}
	db.nextCF = id + 1
	return txnlock.ColumnFamily(id), nil
}

// ColumnFamily returns the id of the column family called name, and false
// if the DB has none.
func (db *DB) ColumnFamily(name string) (txnlock.ColumnFamily, bool) {
	db.cfMu.Lock()
	defer db.cfMu.Unlock()
	cf, ok := db.cfs[name]
	return cf, ok
}

// ColumnFamilies returns every column family's id by name, the default one
// included.
func (db *DB) ColumnFamilies() map[string]txnlock.ColumnFamily {
	db.cfMu.Lock()
	defer db.cfMu.Unlock()
	return maps.Clone(db.cfs)
}

// checkCF fails op of txn (0: none) if cf is not a column family of the DB,
// with an error matching txnlock.ErrUnknownColumnFamily.
func (db *DB) checkCF(op string, txn txnlock.TxnID, cf txnlock.ColumnFamily) error {
	if uint32(cf) < 64 && db.low.Load()&(1<<cf) != 0 {
		return nil
	}
	if _, ok := (*db.ids.Load())[cf]; !ok {
		return &txnError{op: op, txn: txn, err: fmt.Errorf("%w: %v", txnlock.ErrUnknownColumnFamily, cf)}
	}
	return nil
}

// Manager returns the lock manager.
func (db *DB) Manager() txnlock.Manager { return db.opts.Manager }

// Options returns the options the DB runs with.
func (db *DB) Options() Options { return db.opts }

// Pebble returns the underlying Pebble DB, for bulk loads and metrics.
// Writes made through it bypass locking.
func (db *DB) Pebble() *pebble.DB { return db.pdb }

// Close rolls back every open transaction (their later calls fail with
// ErrClosed, a lock wait in progress too, and their locks are released)
// and makes every later call fail with ErrClosed. It waits for commits in flight. It closes the Pebble DB
// if Open opened it, never the manager. Closing twice returns ErrClosed.
func (db *DB) Close() (err error) {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return &txnError{op: "close", err: ErrClosed}
	}
	db.closed = true
	db.closedFlag.Store(true)
	db.mu.Unlock()
	db.txnMu.Lock()
	open := make([]*Txn, 0, len(db.txns))
	for _, t := range db.txns {
		open = append(open, t)
	}
	clear(db.txns)
	db.txnMu.Unlock()
	var errs []error
	for _, t := range open {
		// Release fails a lock wait in progress and leaves nothing held
		// (a closed manager is not an error there).
		if err := t.h.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	if db.ownsPebble {
		errs = append(errs, db.closePebble())
	}
	return errors.Join(errs...)
}

// checkOpenLocked fails op of txn (0: none) on a closed DB with ErrClosed
// (in a txnError for a transaction), and on one that saw a fatal Pebble
// error with a *StorageError wrapping it; mu is held.
func (db *DB) checkOpenLocked(op string, txn txnlock.TxnID) error {
	switch {
	case db.closed && txn.Valid():
		return &txnError{op: op, txn: txn, err: ErrClosed}
	case db.closed:
		return &txnError{op: op, err: ErrClosed}
	}
	return db.fatal.failed(op, txn)
}

// closePebble closes the Pebble DB that Open opened.
func (db *DB) closePebble() (err error) {
	defer db.recoverPebble("close", 0, &err)
	return storageErr("close", 0, db.pdb.Close())
}

// isClosed reports whether Close was called.
func (db *DB) isClosed() bool { return db.closedFlag.Load() }

func (db *DB) addTxn(t *Txn) {
	db.txnMu.Lock()
	db.txns[t.id] = t
	db.txnMu.Unlock()
}

func (db *DB) removeTxn(t *Txn) {
	db.txnMu.Lock()
	delete(db.txns, t.id)
	db.txnMu.Unlock()
}
