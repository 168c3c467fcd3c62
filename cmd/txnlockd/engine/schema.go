package engine

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/txnlock/txnlock"
)

// Column is one column of a table.
type Column struct {
	Name     string
	Int      bool // an integer type; otherwise a string type
	Unsigned bool
	// MaxLen bounds a string column's length in characters (0: no bound).
	MaxLen  int
	NotNull bool
	AutoInc bool
	// Default is the value an INSERT that leaves the column out stores.
	Default Value
	// Type is the declared type, for SHOW and the data_locks tables.
	Type string
}

// Index is a secondary index: non-unique, its entries are the indexed
// values followed by the row's key.
type Index struct {
	Name string
	ID   uint16
	Cols []int // column positions

	cf txnlock.ColumnFamily
}

// Table is a table's schema. Immutable: DDL makes a new one.
type Table struct {
	DB, Name string
	ID       uint32
	Columns  []Column
	// Key is the position of the clustered key column, an integer: the
	// PRIMARY KEY, else the first UNIQUE NOT NULL integer column (as
	// InnoDB picks), else -1 and rows get a hidden row id.
	Key     int
	Indexes []Index
	// NextIndex is the id of the next index created.
	NextIndex uint16

	rt *runtime // shared by every version of the table
}

// Column returns the position of the named column (case-insensitive).
func (t *Table) Column(name string) (int, bool) {
	for i, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return i, true
		}
	}
	return -1, false
}

// Index returns the named index.
func (t *Table) Index(name string) (*Index, bool) {
	for i := range t.Indexes {
		if strings.EqualFold(t.Indexes[i].Name, name) {
			return &t.Indexes[i], true
		}
	}
	return nil, false
}

// AutoIncColumn is the position of the AUTO_INCREMENT column, or -1.
func (t *Table) AutoIncColumn() int {
	for i, c := range t.Columns {
		if c.AutoInc {
			return i
		}
	}
	return -1
}

func (t *Table) clone() *Table {
	c := *t
	c.Columns = append([]Column(nil), t.Columns...)
	c.Indexes = append([]Index(nil), t.Indexes...)
	return &c
}

// Key layout. A table's keys, in the column family its layout gives:
//
//	row        't' table(4) 'p' key(8)                  → encoded row
//	index      't' table(4) 'i' index(2) values… key(8) → ""
//
// Integers are big-endian with the sign bit flipped (byte order is numeric
// order); index values are encoded as appendKeyValue says. The catalog is
// in the default column family:
//
//	database   'c' 'd' name                  → ""
//	table      'c' 't' db 0x00 name          → JSON schema
//	next id    'c' 'n'                       → table id(4)
//
// The AUTO-INC lock of a table is a key in the manager only (default
// column family), never stored: 0xff "autoinc" table(4).
func tablePrefix(id uint32, tag byte) []byte {
	b := append(make([]byte, 0, 16), 't')
	b = binary.BigEndian.AppendUint32(b, id)
	return append(b, tag)
}

func rowKey(id uint32, key int64) []byte { return appendInt(tablePrefix(id, 'p'), key) }

func indexPrefix(id uint32, idx uint16) []byte {
	return binary.BigEndian.AppendUint16(tablePrefix(id, 'i'), idx)
}

func indexKey(t *Table, ix *Index, row []Value, key int64) []byte {
	b := indexPrefix(t.ID, ix.ID)
	for _, c := range ix.Cols {
		b = appendKeyValue(b, row[c])
	}
	return appendInt(b, key)
}

func autoIncKey(id uint32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte{0xff}, "autoinc"...), id)
}

func dbKey(db string) []byte { return append([]byte("cd"), db...) }

func tableKey(db, name string) []byte {
	return append(append(append([]byte("ct"), db...), 0), name...)
}

var nextIDKey = []byte("cn")

// keyRange is [lo, hi] of a table's row keys.
func keyRange(id uint32, lo, hi int64) (txnlock.Range, error) {
	return txnlock.Inclusive(rowKey(id, lo), rowKey(id, hi))
}

// indexRange is the entries whose first indexed value is in [lo, hi].
func indexRange(t *Table, ix *Index, lo, hi Value) (txnlock.Range, error) {
	p := indexPrefix(t.ID, ix.ID)
	start := appendKeyValue(append([]byte(nil), p...), lo)
	end := appendKeyValue(append([]byte(nil), p...), hi)
	// every entry starting with hi's encoding: up to the next prefix
	return txnlock.HalfOpen(start, prefixEnd(end))
}

// prefixEnd is the least key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	e := append([]byte(nil), p...)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] != 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

// describeKey renders a key for the lock tables: which table and index,
// and the values.
func (e *Engine) describeKey(cat *catalog, k []byte) (schema, table, index, data string) {
	if len(k) < 6 || k[0] != 't' {
		if len(k) > 8 && k[0] == 0xff {
			if t := cat.byID[binary.BigEndian.Uint32(k[len(k)-4:])]; t != nil {
				return t.DB, t.Name, "", "AUTO-INC"
			}
		}
		return "", "", "", fmt.Sprintf("%x", k)
	}
	t := cat.byID[binary.BigEndian.Uint32(k[1:5])]
	if t == nil {
		return "", "", "", fmt.Sprintf("%x", k)
	}
	rest := k[6:]
	switch k[5] {
	case 'p':
		if len(rest) == 8 {
			return t.DB, t.Name, "PRIMARY", fmt.Sprint(readInt(rest))
		}
		return t.DB, t.Name, "PRIMARY", fmt.Sprintf("%x", rest)
	case 'i':
		name := ""
		if len(rest) >= 2 {
			id := binary.BigEndian.Uint16(rest)
			for _, ix := range t.Indexes {
				if ix.ID == id {
					name = ix.Name
				}
			}
			rest = rest[2:]
		}
		return t.DB, t.Name, name, decodeIndexData(rest)
	}
	return t.DB, t.Name, "", fmt.Sprintf("%x", rest)
}

// DescribeRange renders a lock's range for the lock tables: the schema,
// table and index it is in, and its data ("5", "(7, 12)", a range "[a, b]").
func (e *Engine) DescribeRange(_ txnlock.ColumnFamily, r txnlock.Range) (schema, table, index, data string) {
	cat := e.cat.Load()
	if k, ok := r.PointKey(); ok {
		return e.describeKey(cat, k)
	}
	schema, table, index, lo := e.describeKey(cat, r.Start().Key())
	hi := "+inf"
	if !r.End().IsPosInf() {
		_, _, _, hi = e.describeKey(cat, r.End().Key())
	}
	return schema, table, index, "[" + lo + ", " + hi + "]"
}

// decodeIndexData renders an index entry's values and row key.
func decodeIndexData(b []byte) string {
	var parts []string
	for len(b) > 8 {
		switch b[0] {
		case 0:
			parts = append(parts, "NULL")
			b = b[1:]
		case 1:
			if len(b) < 9 {
				return fmt.Sprintf("%x", b)
			}
			parts = append(parts, fmt.Sprint(readInt(b[1:9])))
			b = b[9:]
		case 2:
			var s []byte
			i := 1
			for ; i+1 < len(b) && !(b[i] == 0 && b[i+1] == 1); i++ {
				if b[i] == 0 && b[i+1] == 0xff {
					s = append(s, 0)
					i++
					continue
				}
				s = append(s, b[i])
			}
			parts = append(parts, fmt.Sprintf("%q", s))
			b = b[min(i+2, len(b)):]
		default:
			return fmt.Sprintf("%x", b)
		}
	}
	if len(b) == 8 {
		parts = append(parts, fmt.Sprint(readInt(b)))
	} else if len(b) > 0 {
		parts = append(parts, fmt.Sprintf("%x", b))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
