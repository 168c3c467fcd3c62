package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/pebbletxn"
	"github.com/txnlock/txnlock/pointlock"
	"github.com/txnlock/txnlock/rangelock"
)

// Engine is the databases and tables of one server, on a Pebble store,
// with transactions from pebbletxn and locks from a txnlock manager. Safe
// for concurrent use; a Txn is not.
type Engine struct {
	opts Options
	det  *deadlock.Detector
	mgr  txnlock.Manager
	tdb  *pebbletxn.DB

	// ddl serializes DDL statements; the catalog they publish is read
	// without it.
	ddl sync.Mutex
	cat atomic.Pointer[catalog]
}

// catalog is the immutable set of databases and tables; DDL publishes a
// new one.
type catalog struct {
	dbs    map[string]bool
	tables map[string]*Table // by db + "\x00" + name
	byID   map[uint32]*Table
	nextID uint32
}

func (c *catalog) clone() *catalog {
	n := &catalog{dbs: map[string]bool{}, tables: map[string]*Table{}, byID: map[uint32]*Table{}, nextID: c.nextID}
	for k, v := range c.dbs {
		n.dbs[k] = v
	}
	for k, v := range c.tables {
		n.tables[k] = v
		n.byID[v.ID] = v
	}
	return n
}

func (c *catalog) put(t *Table) {
	c.tables[t.DB+"\x00"+t.Name] = t
	c.byID[t.ID] = t
}

// runtime is what a table needs beyond its schema: its column families
// and its AUTO_INCREMENT counter (or hidden row id counter). It survives
// DDL that makes a new Table of the same id.
type runtime struct {
	rowCF txnlock.ColumnFamily
	aiMu  sync.Mutex   // serializes allocation in AUTO-INC modes 0 and 1
	last  atomic.Int64 // the greatest key given out or seen
}

// Open opens (or creates) the store.
func Open(opts Options) (*Engine, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{opts: opts}
	det, err := deadlock.New(opts.Detector)
	if err != nil {
		return nil, err
	}
	e.det = det
	wo := txnlock.WaitOptions{LockTimeout: opts.LockTimeout, Detector: det}
	if opts.OnWait != nil {
		wo.Detector = detect.Wrap(det, func(g detect.Graph) detect.Graph { return hookGraph{g, opts.OnWait} })
	}
	if opts.Lock == LockRange {
		m, err := rangelock.New(rangelock.Options{WaitOptions: wo})
		if err != nil {
			det.Close()
			return nil, err
		}
		e.mgr = m
	} else {
		m, err := pointlock.New(pointlock.Options{WaitOptions: wo})
		if err != nil {
			det.Close()
			return nil, err
		}
		e.mgr = m
	}
	po := &pebble.Options{CacheSize: opts.CacheSize, MemTableSize: opts.MemTableSize, Logger: quietLogger{}, EventListener: &pebble.EventListener{}}
	if opts.Dir == "" {
		po.FS = vfs.NewMem()
	}
	e.tdb, err = pebbletxn.Open(opts.Dir, pebbletxn.OpenOptions{
		Options: pebbletxn.Options{Manager: e.mgr, RangeLocking: opts.Lock == LockRange, Sync: opts.Sync, LockTimeout: opts.LockTimeout},
		Pebble:  po,
	})
	if err != nil {
		e.mgr.Close()
		det.Close()
		return nil, err
	}
	if err := e.loadCatalog(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close closes the store, the manager and the detector, in that order.
func (e *Engine) Close() error {
	return errors.Join(e.tdb.Close(), e.mgr.Close(), e.det.Close())
}

// Options returns the options the engine runs with.
func (e *Engine) Options() Options { return e.opts }

// Manager is the lock manager.
func (e *Engine) Manager() txnlock.Manager { return e.mgr }

// Detector is the deadlock detector.
func (e *Engine) Detector() *deadlock.Detector { return e.det }

func (e *Engine) loadCatalog() error {
	cat := &catalog{dbs: map[string]bool{}, tables: map[string]*Table{}, byID: map[uint32]*Table{}, nextID: 1}
	snap, err := e.tdb.NewSnapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	var derr error
	err = snap.Scan(txnlock.DefaultColumnFamily, txnlock.Prefix([]byte("c")), func(k, v []byte) bool {
		switch k[1] {
		case 'd':
			cat.dbs[string(k[2:])] = true
		case 'n':
			cat.nextID = binary.BigEndian.Uint32(v)
		case 't':
			t := &Table{}
			if derr = json.Unmarshal(v, t); derr != nil {
				return false
			}
			cat.put(t)
		}
		return true
	})
	if err = errors.Join(err, derr); err != nil {
		return fmt.Errorf("txnlockd: read catalog: %w", err)
	}
	for _, t := range cat.byID {
		if err := e.attach(t, snap); err != nil {
			return err
		}
	}
	e.cat.Store(cat)
	return nil
}

// attach gives t its runtime: column families and the counter, which
// starts after the greatest key stored.
func (e *Engine) attach(t *Table, snap *pebbletxn.Snapshot) error {
	rt := &runtime{}
	var err error
	if rt.rowCF, err = e.cf(t, "PRIMARY", true); err != nil {
		return err
	}
	for i := range t.Indexes {
		if t.Indexes[i].cf, err = e.cf(t, t.Indexes[i].Name, false); err != nil {
			return err
		}
	}
	if snap != nil {
		k, _, found, err := snap.Last(rt.rowCF, txnlock.Prefix(tablePrefix(t.ID, 'p')))
		if err != nil {
			return err
		}
		if found {
			rt.last.Store(readInt(k[6:]))
		}
	}
	t.rt = rt
	return nil
}

// cf is the column family of t's index (PRIMARY: the rows) by layout.
func (e *Engine) cf(t *Table, index string, primary bool) (txnlock.ColumnFamily, error) {
	switch e.opts.Layout {
	case LayoutPerTable:
		return e.tdb.CreateColumnFamily(t.DB + "." + t.Name)
	case LayoutPerIndex:
		if primary {
			index = "PRIMARY"
		}
		return e.tdb.CreateColumnFamily(t.DB + "." + t.Name + "." + index)
	}
	return txnlock.DefaultColumnFamily, nil
}

// HasDB reports whether database db exists.
func (e *Engine) HasDB(db string) bool { return e.cat.Load().dbs[db] }

// DBs lists the databases.
func (e *Engine) DBs() []string {
	var out []string
	for d := range e.cat.Load().dbs {
		out = append(out, d)
	}
	return out
}

// Table returns db.name.
func (e *Engine) Table(db, name string) (*Table, bool) {
	t, ok := e.cat.Load().tables[db+"\x00"+name]
	return t, ok
}

// Tables lists the tables of db.
func (e *Engine) Tables(db string) []*Table {
	var out []*Table
	for _, t := range e.cat.Load().tables {
		if t.DB == db {
			out = append(out, t)
		}
	}
	return out
}

// commitCatalog persists the changes in w and publishes cat. Requires e.ddl.
func (e *Engine) commitCatalogLocked(w *pebbletxn.WriteBatch, cat *catalog) error {
	if err := w.Commit(e.opts.Sync); err != nil {
		return errStorage("DDL", err)
	}
	e.cat.Store(cat)
	return nil
}

// CreateDatabase is CREATE DATABASE.
func (e *Engine) CreateDatabase(db string, ifNotExists bool) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	if cat.dbs[db] {
		if ifNotExists {
			return nil
		}
		return errDBExists(db)
	}
	cat = cat.clone()
	cat.dbs[db] = true
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	if err := w.Put(txnlock.DefaultColumnFamily, dbKey(db), nil); err != nil {
		return errStorage("CREATE DATABASE", err)
	}
	return e.commitCatalogLocked(w, cat)
}

// DropDatabase is DROP DATABASE: its tables and their rows go too.
func (e *Engine) DropDatabase(db string, ifExists bool) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	if !cat.dbs[db] {
		if ifExists {
			return nil
		}
		return errDropNoDB(db)
	}
	cat = cat.clone()
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	for _, t := range cat.tables {
		if t.DB == db {
			if err := e.dropTable(w, cat, t); err != nil {
				return err
			}
		}
	}
	delete(cat.dbs, db)
	if err := w.Delete(txnlock.DefaultColumnFamily, dbKey(db)); err != nil {
		return errStorage("DROP DATABASE", err)
	}
	return e.commitCatalogLocked(w, cat)
}

func (e *Engine) dropTable(w *pebbletxn.WriteBatch, cat *catalog, t *Table) error {
	err := w.DeleteRange(t.rt.rowCF, txnlock.Prefix(tablePrefix(t.ID, 'p')))
	for _, ix := range t.Indexes {
		err = errors.Join(err, w.DeleteRange(ix.cf, txnlock.Prefix(indexPrefix(t.ID, ix.ID))))
	}
	err = errors.Join(err, w.Delete(txnlock.DefaultColumnFamily, tableKey(t.DB, t.Name)))
	if err != nil {
		return errStorage("DROP TABLE", err)
	}
	delete(cat.tables, t.DB+"\x00"+t.Name)
	delete(cat.byID, t.ID)
	return nil
}

// CreateTable is CREATE TABLE; t's DB, Name, Columns, Key and Indexes are
// set, the rest is filled here.
func (e *Engine) CreateTable(t *Table, ifNotExists bool) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	if !cat.dbs[t.DB] {
		return errNoDB(t.DB)
	}
	if _, ok := cat.tables[t.DB+"\x00"+t.Name]; ok {
		if ifNotExists {
			return nil
		}
		return errTableExists(t.Name)
	}
	cat = cat.clone()
	t.ID = cat.nextID
	cat.nextID++
	for i := range t.Indexes {
		t.Indexes[i].ID = uint16(i + 1)
	}
	t.NextIndex = uint16(len(t.Indexes) + 1)
	if err := e.attach(t, nil); err != nil {
		return err
	}
	cat.put(t)
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	if err := e.putTable(w, t); err != nil {
		return err
	}
	if err := w.Put(txnlock.DefaultColumnFamily, nextIDKey, binary.BigEndian.AppendUint32(nil, cat.nextID)); err != nil {
		return errStorage("CREATE TABLE", err)
	}
	return e.commitCatalogLocked(w, cat)
}

func (e *Engine) putTable(w *pebbletxn.WriteBatch, t *Table) error {
	b, err := json.Marshal(t)
	if err == nil {
		err = w.Put(txnlock.DefaultColumnFamily, tableKey(t.DB, t.Name), b)
	}
	if err != nil {
		return errStorage("DDL", err)
	}
	return nil
}

// DropTable is DROP TABLE.
func (e *Engine) DropTable(db, name string, ifExists bool) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	t, ok := cat.tables[db+"\x00"+name]
	if !ok {
		if ifExists {
			return nil
		}
		return errorf(1051, "42S02", "Unknown table '%s.%s'", db, name)
	}
	cat = cat.clone()
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	if err := e.dropTable(w, cat, t); err != nil {
		return err
	}
	return e.commitCatalogLocked(w, cat)
}

// CreateIndex is CREATE INDEX (or ALTER TABLE ADD INDEX): it writes an
// entry for every committed row (the backfill), then publishes the index.
// Rows that transactions running meanwhile write reach the index only if
// they commit after it is published: run it, as sysbench's prepare does,
// with no writers on the table.
func (e *Engine) CreateIndex(db, table, name string, cols []string) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	old, ok := cat.tables[db+"\x00"+table]
	if !ok {
		return ErrNoTable(db, table)
	}
	if _, dup := old.Index(name); dup {
		return errDupKeyName(name)
	}
	t := old.clone()
	ix := Index{Name: name, ID: t.NextIndex}
	var err error
	if ix.cf, err = e.cf(t, name, false); err != nil {
		return errStorage("CREATE INDEX", err)
	}
	for _, c := range cols {
		i, ok := t.Column(c)
		if !ok {
			return ErrBadField(c, "index")
		}
		ix.Cols = append(ix.Cols, i)
	}
	t.NextIndex++
	t.Indexes = append(t.Indexes, ix)
	if err := e.backfill(t, &t.Indexes[len(t.Indexes)-1]); err != nil {
		return err
	}
	cat = cat.clone()
	cat.put(t)
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	if err := e.putTable(w, t); err != nil {
		return err
	}
	return e.commitCatalogLocked(w, cat)
}

// backfill writes ix's entries for every committed row, in batches.
func (e *Engine) backfill(t *Table, ix *Index) error {
	snap, err := e.tdb.NewSnapshot()
	if err != nil {
		return errStorage("CREATE INDEX", err)
	}
	defer snap.Close()
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	var werr error
	err = snap.Scan(t.rt.rowCF, txnlock.Prefix(tablePrefix(t.ID, 'p')), func(k, v []byte) bool {
		row, err := decodeRow(v, len(t.Columns))
		if err == nil {
			err = w.Put(ix.cf, indexKey(t, ix, row, readInt(k[6:])), nil)
		}
		if err == nil && w.Len() >= 1000 {
			err = w.Commit(e.opts.Sync)
		}
		werr = err
		return err == nil
	})
	if err = errors.Join(err, werr); err == nil {
		err = w.Commit(e.opts.Sync)
	}
	if err != nil {
		return errStorage("CREATE INDEX", err)
	}
	return nil
}

// DropIndex is DROP INDEX.
func (e *Engine) DropIndex(db, table, name string) error {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cat := e.cat.Load()
	old, ok := cat.tables[db+"\x00"+table]
	if !ok {
		return ErrNoTable(db, table)
	}
	t := old.clone()
	i := -1
	for j, ix := range t.Indexes {
		if ix.Name == name {
			i = j
		}
	}
	if i < 0 {
		return errNoKey(name)
	}
	ix := t.Indexes[i]
	t.Indexes = append(t.Indexes[:i], t.Indexes[i+1:]...)
	cat = cat.clone()
	cat.put(t)
	w := e.tdb.NewWriteBatch()
	defer w.Close()
	if err := w.DeleteRange(ix.cf, txnlock.Prefix(indexPrefix(t.ID, ix.ID))); err != nil {
		return errStorage("DROP INDEX", err)
	}
	if err := e.putTable(w, t); err != nil {
		return err
	}
	return e.commitCatalogLocked(w, cat)
}

// quietLogger drops Pebble's informational logs.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// hookGraph is an attachment to the detector with Options.OnWait called
// on each wait.
type hookGraph struct {
	detect.Graph
	onWait func(txnlock.TxnID)
}

func (h hookGraph) Block(e detect.Edge) bool {
	h.onWait(e.Waiter.Txn())
	return h.Graph.Block(e)
}
