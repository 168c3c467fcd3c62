package sbtest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// TestLockingRules pins the rules table of doc.go: for each statement and
// lock kind, the locks the transaction holds after running it alone.
func TestLockingRules(t *testing.T) {
	type stmt struct {
		name string
		run  func(tx *Tx) error
	}
	stmts := []stmt{
		{"PointSelect", func(tx *Tx) error { _, _, err := tx.PointSelect(bg, 1, 5); return err }},
		{"SelectForUpdate", func(tx *Tx) error { _, _, err := tx.SelectForUpdate(bg, 1, 5); return err }},
		{"SelectForShare", func(tx *Tx) error { _, _, err := tx.SelectForShare(bg, 1, 5); return err }},
		{"UpdateIndex", func(tx *Tx) error { _, err := tx.UpdateIndex(bg, 1, 5); return err }},
		{"UpdateNonIndex", func(tx *Tx) error { _, err := tx.UpdateNonIndex(bg, 1, 5, "c"); return err }},
		{"Delete", func(tx *Tx) error { _, err := tx.Delete(bg, 1, 5); return err }},
		{"Insert", func(tx *Tx) error { return tx.Insert(bg, 1, Row{ID: 500, K: 7}) }},
		{"InsertAuto", func(tx *Tx) error { _, err := tx.InsertAuto(bg, 1, 7, "", ""); return err }},
		{"RangeSelect", func(tx *Tx) error { _, err := tx.RangeSelect(bg, 1, 3, 6, false); return err }},
		{"RangeSelectForUpdate", func(tx *Tx) error { _, err := tx.RangeSelect(bg, 1, 3, 6, true); return err }},
	}
	want := map[LockKind][]string{
		LockPoint: {
			"", "PK5 X", "PK5 S", "PK5 X", "PK5 X", "PK5 X", "PK500 X", "PK101 X",
			"", "PK3 X, PK4 X, PK5 X, PK6 X",
		},
		LockRange: {
			"", "PK5 X", "PK5 S", "PK5 X, SK(k5) X, SK(k5+1) X", "PK5 X", "PK5 X, SK(k5) X", "PK500 X, SK7/500 X", "PK101 X, SK7/101 X",
			"", "PK[3..6] X",
		},
		LockPointSK: {
			"", "PK5 X", "PK5 S", "PK5 X, SK(k5) X, SK(k5+1) X", "PK5 X", "PK5 X, SK(k5) X", "PK500 X, SK7/500 X", "PK101 X, SK7/101 X",
			"", "PK3 X, PK4 X, PK5 X, PK6 X",
		},
		LockTable: {"T X", "T X", "T X", "T X", "T X", "T X", "T X", "T X", "T X", "T X"},
		LockNone:  {"", "", "", "", "", "", "", "", "", ""},
	}
	for _, lock := range []LockKind{LockPoint, LockRange, LockPointSK, LockTable, LockNone} {
		db := open(t, Options{Lock: lock})
		r := db.Begin()
		k5, _, err := r.PointSelect(bg, 1, 5)
		require.NoError(t, err)
		require.NoError(t, r.Rollback())
		for i, s := range stmts {
			tx := db.Begin()
			require.NoError(t, s.run(tx), "%s %s", lock, s.name)
			got := describeLocks(db, tx.ID(), k5.K)
			require.Equal(t, want[lock][i], got, "%s: %s", lock, s.name)
			require.NoError(t, tx.Rollback())
		}
	}
}

// describeLocks renders the locks txn holds: "PK5 X", "SK(k5) X" (k5 is
// row 5's k), "SK7/500 X", "PK[3..6] X", "T X", "AI X", sorted.
func describeLocks(db *DB, txn txnlock.TxnID, k5 int64) string {
	t := db.tables[1]
	var out []string
	for _, l := range db.Manager().Status().Locks {
		held := false
		for _, h := range l.Holders {
			held = held || h == txn
		}
		if !held {
			continue
		}
		var what string
		key, point := l.Range.PointKey()
		switch {
		case !point:
			lo := readInt(l.Range.Start().Key()[len(t.pkPrefix):])
			hi := readInt(l.Range.End().Key()[len(t.pkPrefix):])
			what = fmt.Sprintf("PK[%d..%d]", lo, hi)
		case bytes.HasPrefix(key, t.pkPrefix):
			what = fmt.Sprintf("PK%d", readInt(key[len(t.pkPrefix):]))
		case bytes.HasPrefix(key, t.skPrefix):
			k, id := readInt(key[len(t.skPrefix):]), readInt(key[len(t.skPrefix)+8:])
			switch {
			case id == 5 && k == k5:
				what = "SK(k5)"
			case id == 5 && k == k5+1:
				what = "SK(k5+1)"
			default:
				what = fmt.Sprintf("SK%d/%d", k, id)
			}
		case bytes.Equal(key, t.tableKey):
			what = "T"
		case bytes.Equal(key, t.aiKey):
			what = "AI"
		default:
			what = fmt.Sprintf("%x", key)
		}
		out = append(out, what+" "+l.Mode.String())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
