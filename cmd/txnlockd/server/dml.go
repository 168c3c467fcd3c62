package server

import (
	"context"
	"errors"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// dmlTable resolves the single table an UPDATE or DELETE names.
func (s *session) dmlTable(exprs []sqlparser.TableExpr) (*engine.Table, error) {
	if len(exprs) != 1 {
		return nil, unsupported("multi-table UPDATE or DELETE")
	}
	ate, ok := exprs[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return nil, unsupported("multi-table UPDATE or DELETE")
	}
	tn, ok := ate.Expr.(sqlparser.TableName)
	if !ok {
		return nil, unsupported("UPDATE or DELETE of a derived table")
	}
	return s.table(tn)
}

// inTxn runs fn in the session's transaction (an autocommit statement's
// own, committed or rolled back after it).
func (s *session) inTxn(fn func(*engine.Txn) error) error {
	txn, err := s.begin()
	if err != nil {
		return err
	}
	return s.finishAutocommit(fn(txn))
}

func (s *session) execInsert(ctx context.Context, ins *sqlparser.Insert, args map[string]engine.Value) (*sqltypes.Result, error) {
	switch {
	case ins.Action == sqlparser.ReplaceAct:
		return nil, unsupported("REPLACE")
	case bool(ins.Ignore):
		return nil, unsupported("INSERT IGNORE")
	case len(ins.OnDup) > 0:
		return nil, unsupported("ON DUPLICATE KEY UPDATE")
	case ins.RowAlias != nil || len(ins.Partitions) > 0:
		return nil, unsupported("INSERT row aliases or partitions")
	}
	tn, ok := ins.Table.Expr.(sqlparser.TableName)
	if !ok {
		return nil, unsupported("INSERT into a derived table")
	}
	t, err := s.table(tn)
	if err != nil {
		return nil, err
	}
	values, ok := ins.Rows.(sqlparser.Values)
	if !ok {
		return nil, unsupported("INSERT … SELECT")
	}
	cols := make([]int, 0, len(t.Columns))
	if len(ins.Columns) == 0 {
		for i := range t.Columns {
			cols = append(cols, i)
		}
	}
	for _, c := range ins.Columns {
		i, ok := t.Column(c.String())
		if !ok {
			return nil, engine.ErrBadField(c.String(), "field list")
		}
		cols = append(cols, i)
	}
	sc := &scope{s: s, args: args}
	rows := make([][]engine.Value, len(values))
	for r, tuple := range values {
		if len(tuple) != len(cols) {
			return nil, errColumnCount(r + 1)
		}
		row := make([]engine.Value, len(t.Columns))
		for i, c := range t.Columns {
			row[i] = c.Default
		}
		for i, e := range tuple {
			if _, ok := e.(*sqlparser.Default); ok {
				continue
			}
			v, err := sc.eval(e)
			if err != nil {
				return nil, err
			}
			row[cols[i]] = v
		}
		rows[r] = row
	}
	var id int64
	err = s.inTxn(func(txn *engine.Txn) error {
		var err error
		id, err = txn.Insert(ctx, t, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	if id != 0 {
		s.lastInsertID = id
	}
	return &sqltypes.Result{RowsAffected: uint64(len(rows)), InsertID: uint64(id)}, nil
}

func (s *session) execUpdate(ctx context.Context, up *sqlparser.Update, args map[string]engine.Value) (*sqltypes.Result, error) {
	if up.With != nil || len(up.OrderBy) > 0 || up.Limit != nil || bool(up.Ignore) {
		return nil, unsupported("UPDATE with WITH, ORDER BY, LIMIT or IGNORE")
	}
	t, err := s.dmlTable(up.TableExprs)
	if err != nil {
		return nil, err
	}
	set := make([]int, len(up.Exprs))
	for i, ue := range up.Exprs {
		c, ok := t.Column(ue.Name.Name.String())
		if !ok {
			return nil, engine.ErrBadField(ue.Name.Name.String(), "field list")
		}
		set[i] = c
	}
	var changed uint64
	err = s.inTxn(func(txn *engine.Txn) error {
		matched, err := s.matching(ctx, txn, t, up.Where, args)
		if err != nil {
			return err
		}
		sc := &scope{s: s, cols: tableColumns(t), args: args}
		var changes []engine.Change
		for _, m := range matched {
			row := append([]engine.Value(nil), m.Old...)
			sc.row = row
			for i, ue := range up.Exprs {
				v, err := sc.eval(ue.Expr)
				if err != nil {
					return err
				}
				row[set[i]] = v
			}
			if err := engine.CheckRow(t, row); err != nil {
				return err
			}
			if t.Key >= 0 && row[t.Key] != m.Old[t.Key] {
				return unsupported("UPDATE of the clustered key")
			}
			if !equalRows(row, m.Old) {
				changes = append(changes, engine.Change{Key: m.Key, Old: m.Old, New: row})
			}
		}
		changed = uint64(len(changes))
		return txn.Update(ctx, t, changes)
	})
	if err != nil {
		return nil, err
	}
	return &sqltypes.Result{RowsAffected: changed}, nil
}

func equalRows(a, b []engine.Value) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *session) execDelete(ctx context.Context, del *sqlparser.Delete, args map[string]engine.Value) (*sqltypes.Result, error) {
	if del.With != nil || len(del.OrderBy) > 0 || del.Limit != nil || len(del.Targets) > 0 || bool(del.Ignore) || len(del.Partitions) > 0 {
		return nil, unsupported("DELETE with WITH, ORDER BY, LIMIT, IGNORE, partitions or targets")
	}
	t, err := s.dmlTable(del.TableExprs)
	if err != nil {
		return nil, err
	}
	var n uint64
	err = s.inTxn(func(txn *engine.Txn) error {
		matched, err := s.matching(ctx, txn, t, del.Where, args)
		if err != nil {
			return err
		}
		n = uint64(len(matched))
		return txn.Delete(ctx, t, matched)
	})
	if err != nil {
		return nil, err
	}
	return &sqltypes.Result{RowsAffected: n}, nil
}

// matching reads, under exclusive locks, the rows where holds.
func (s *session) matching(ctx context.Context, txn *engine.Txn, t *engine.Table, where *sqlparser.Where, args map[string]engine.Value) ([]engine.Change, error) {
	sc := &scope{s: s, cols: tableColumns(t), args: args}
	var expr sqlparser.Expr
	if where != nil {
		expr = where.Expr
	}
	var out []engine.Change
	var eerr error
	err := sc.plan(t, expr).visit(ctx, txn, t, engine.UpdateLock, func(key int64, row []engine.Value) bool {
		if expr != nil {
			sc.row = row
			var v engine.Value
			v, eerr = sc.eval(expr)
			if eerr != nil {
				return false
			}
			if !isTrue(v) {
				return true
			}
		}
		out = append(out, engine.Change{Key: key, Old: row})
		return true
	})
	return out, errors.Join(err, eerr)
}
