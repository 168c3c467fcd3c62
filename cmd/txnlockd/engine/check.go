package engine

import (
	"errors"

	"github.com/txnlock/txnlock"
)

// IndexCheck is what Check finds for one index.
type IndexCheck struct {
	Index   string
	Entries int // entries found
	Missing int // rows without their entry
	Extra   int // entries without their row
}

// Check compares every index of t with the rows, in one snapshot of the
// committed data: what MySQL's CHECK TABLE reports. It returns the number
// of rows and, per index, the entries found, missing and extra.
func (e *Engine) Check(t *Table) (rows int, out []IndexCheck, err error) {
	snap, err := e.tdb.NewSnapshot()
	if err != nil {
		return 0, nil, errStorage("CHECK", err)
	}
	defer snap.Close()
	want := make([]map[string]bool, len(t.Indexes))
	for i := range want {
		want[i] = map[string]bool{}
	}
	var derr error
	err = snap.Scan(t.rt.rowCF, txnlock.Prefix(tablePrefix(t.ID, 'p')), func(k, v []byte) bool {
		row, err := decodeRow(v, len(t.Columns))
		if err != nil {
			derr = err
			return false
		}
		rows++
		for i := range t.Indexes {
			want[i][string(indexKey(t, &t.Indexes[i], row, readInt(k[6:])))] = true
		}
		return true
	})
	if err = errors.Join(err, derr); err != nil {
		return 0, nil, errStorage("CHECK", err)
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		c := IndexCheck{Index: ix.Name}
		err := snap.Scan(ix.cf, txnlock.Prefix(indexPrefix(t.ID, ix.ID)), func(k, _ []byte) bool {
			c.Entries++
			if want[i][string(k)] {
				delete(want[i], string(k))
			} else {
				c.Extra++
			}
			return true
		})
		if err != nil {
			return 0, nil, errStorage("CHECK", err)
		}
		c.Missing = len(want[i])
		out = append(out, c)
	}
	return rows, out, nil
}
