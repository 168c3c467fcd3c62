package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/sqltypes"
	querypb "vitess.io/vitess/go/vt/proto/query"
	"vitess.io/vitess/go/vt/sqlparser"
)

// output is one result column: its name, its type, how to compute it.
type output struct {
	name string
	int  bool
	expr sqlparser.Expr // nil for a column of a star
	col  int            // with expr nil
	aggr sqlparser.AggrFunc
}

// outputs resolves the select list against cols.
func outputs(sel *sqlparser.Select, cols []column) ([]output, error) {
	var out []output
	for _, se := range sel.GetColumns() {
		switch se := se.(type) {
		case *sqlparser.StarExpr:
			for i, c := range cols {
				out = append(out, output{name: c.name, int: c.int, col: i})
			}
		case *sqlparser.AliasedExpr:
			o := output{expr: se.Expr, name: se.As.String()}
			if o.name == "" {
				if c, ok := se.Expr.(*sqlparser.ColName); ok {
					o.name = c.Name.String()
				} else {
					o.name = sqlparser.String(se.Expr)
				}
			}
			switch e := se.Expr.(type) {
			case *sqlparser.ColName:
				found := false
				for _, c := range cols {
					if strings.EqualFold(c.name, e.Name.String()) {
						o.int, found = c.int, true
					}
				}
				if !found {
					return nil, engine.ErrBadField(e.Name.String(), "field list")
				}
			case sqlparser.AggrFunc:
				switch e.(type) {
				case *sqlparser.Count, *sqlparser.CountStar, *sqlparser.Sum:
					o.int = true
				case *sqlparser.Max, *sqlparser.Min:
					if c, ok := e.GetArg().(*sqlparser.ColName); ok {
						for _, cc := range cols {
							if strings.EqualFold(cc.name, c.Name.String()) {
								o.int = cc.int
							}
						}
					}
				default:
					return nil, unsupported("aggregate " + sqlparser.String(e))
				}
				o.aggr = e
			case *sqlparser.Literal:
				o.int = e.Type == sqlparser.IntVal
			case *sqlparser.BinaryExpr, *sqlparser.ComparisonExpr, *sqlparser.BetweenExpr, *sqlparser.AndExpr, *sqlparser.OrExpr, *sqlparser.NotExpr, *sqlparser.UnaryExpr:
				o.int = true
			case *sqlparser.FuncExpr:
				switch lower(e.Name.String()) {
				case "connection_id", "last_insert_id":
					o.int = true
				}
			}
			out = append(out, o)
		default:
			return nil, unsupported("select expression " + sqlparser.String(se))
		}
	}
	return out, nil
}

// fields makes the result's column definitions.
func fields(outs []output) []*querypb.Field {
	fs := make([]*querypb.Field, len(outs))
	for i, o := range outs {
		f := &querypb.Field{Name: o.name, Type: sqltypes.VarChar, Charset: 255, ColumnLength: 1024}
		if o.int {
			f.Type, f.Charset, f.ColumnLength, f.Flags = sqltypes.Int64, 63, 20, uint32(querypb.MySqlFlag_NUM_FLAG)
		}
		fs[i] = f
	}
	return fs
}

// sqlValue renders v for a column of the given type.
func sqlValue(v engine.Value, isInt bool) sqltypes.Value {
	switch {
	case v.K == engine.Null:
		return sqltypes.NULL
	case isInt:
		n, _ := v.AsInt()
		return sqltypes.NewInt64(n)
	}
	return sqltypes.NewVarChar(v.String())
}

// source is where a SELECT reads: a table, a virtual table, or nothing.
type source struct {
	table *engine.Table
	cols  []column
	rows  [][]engine.Value // a virtual table's
	dual  bool
}

func tableColumns(t *engine.Table) []column {
	cols := make([]column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = column{name: c.Name, int: c.Int}
	}
	return cols
}

// source resolves a SELECT's FROM.
func (s *session) source(sel *sqlparser.Select) (source, error) {
	if len(sel.From) == 0 {
		return source{dual: true}, nil
	}
	if len(sel.From) > 1 {
		return source{}, unsupported("joins")
	}
	ate, ok := sel.From[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return source{}, unsupported("joins")
	}
	tn, ok := ate.Expr.(sqlparser.TableName)
	if !ok {
		return source{}, unsupported("derived tables")
	}
	if tn.Name.String() == "dual" && tn.Qualifier.IsEmpty() {
		return source{dual: true}, nil
	}
	if vt, ok := s.virtualTable(tn); ok {
		return vt, nil
	}
	t, err := s.table(tn)
	if err != nil {
		return source{}, err
	}
	return source{table: t, cols: tableColumns(t)}, nil
}

// readLock is a SELECT's locking clause.
func readLock(l sqlparser.Lock) (engine.ReadLock, bool, error) {
	switch l {
	case sqlparser.NoLock:
		return engine.NoLock, false, nil
	case sqlparser.ForUpdateLock:
		return engine.UpdateLock, false, nil
	case sqlparser.ForUpdateLockNoWait:
		return engine.UpdateLock, true, nil
	case sqlparser.ShareModeLock, sqlparser.ForShareLock:
		return engine.ShareLock, false, nil
	case sqlparser.ForShareLockNoWait:
		return engine.ShareLock, true, nil
	case sqlparser.ForUpdateLockSkipLocked, sqlparser.ForShareLockSkipLocked:
		return 0, false, unsupported("SKIP LOCKED")
	}
	return 0, false, unsupported("locking clause " + l.ToString())
}

func (s *session) execSelect(ctx context.Context, sel *sqlparser.Select, args map[string]engine.Value) (*sqltypes.Result, error) {
	if sel.GroupBy != nil || sel.Having != nil || sel.With != nil || sel.Into != nil {
		return nil, unsupported("GROUP BY, HAVING, WITH or INTO")
	}
	lock, nowait, err := readLock(sel.Lock)
	if err != nil {
		return nil, err
	}
	src, err := s.source(sel)
	if err != nil {
		return nil, err
	}
	outs, err := outputs(sel, src.cols)
	if err != nil {
		return nil, err
	}
	sc := &scope{s: s, cols: src.cols, args: args}
	var where sqlparser.Expr
	if sel.Where != nil {
		where = sel.Where.Expr
	}
	// The matching rows, then projection, DISTINCT, ORDER BY, LIMIT.
	var rows [][]engine.Value
	match := func(row []engine.Value) (bool, error) {
		if where == nil {
			return true, nil
		}
		sc.row = row
		v, err := sc.eval(where)
		return isTrue(v), err
	}
	switch {
	case src.dual:
		rows = [][]engine.Value{nil}
	case src.table == nil:
		for _, row := range src.rows {
			ok, err := match(row)
			if err != nil {
				return nil, err
			}
			if ok {
				rows = append(rows, row)
			}
		}
	default:
		txn, err := s.begin()
		if err != nil {
			return nil, err
		}
		err = s.withNoWait(txn, nowait, func() error {
			var merr error
			verr := sc.plan(src.table, where).visit(ctx, txn, src.table, lock, func(_ int64, row []engine.Value) bool {
				var ok bool
				ok, merr = match(row)
				if ok {
					rows = append(rows, row)
				}
				return merr == nil
			})
			return errors.Join(verr, merr)
		})
		if err = s.finishAutocommit(err); err != nil {
			return nil, err
		}
	}
	return s.project(sc, sel, outs, rows)
}

// withNoWait runs fn with the transaction's lock requests failing at once
// if nowait (a statement's NOWAIT), then restores the session's timeout.
func (s *session) withNoWait(txn *engine.Txn, nowait bool, fn func() error) error {
	if !nowait {
		return fn()
	}
	if err := txn.SetLockTimeout(txnlock.NoWait); err != nil {
		return err
	}
	err := fn()
	txn.SetLockTimeout(s.lockTimeout)
	return err
}

// project computes the result rows from the matching source rows.
func (s *session) project(sc *scope, sel *sqlparser.Select, outs []output, rows [][]engine.Value) (*sqltypes.Result, error) {
	res := &sqltypes.Result{Fields: fields(outs)}
	aggregate := false
	for _, o := range outs {
		aggregate = aggregate || o.aggr != nil
	}
	if aggregate {
		vals := make([]engine.Value, len(outs))
		for i, o := range outs {
			v, err := s.aggregateValue(sc, o, rows)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		res.Rows = [][]sqltypes.Value{toSQL(vals, outs)}
		return s.limit(sc, sel, res)
	}
	type outRow struct{ src, vals []engine.Value }
	out := make([]outRow, 0, len(rows))
	seen := map[string]bool{}
	for _, row := range rows {
		sc.row = row
		vals := make([]engine.Value, len(outs))
		for i, o := range outs {
			if o.expr == nil {
				vals[i] = row[o.col]
				continue
			}
			v, err := sc.eval(o.expr)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		if sel.Distinct {
			k := rowKeyString(vals)
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		out = append(out, outRow{row, vals})
	}
	if len(sel.OrderBy) > 0 {
		keys := make([][]engine.Value, len(out))
		for i, r := range out {
			sc.row = r.src
			for _, ob := range sel.OrderBy {
				v, err := s.orderValue(sc, ob.Expr, outs, r.vals)
				if err != nil {
					return nil, err
				}
				keys[i] = append(keys[i], v)
			}
		}
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			for j, ob := range sel.OrderBy {
				c := compareNullsFirst(keys[a][j], keys[b][j])
				if ob.Direction == sqlparser.DescOrder {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		sorted := make([]outRow, len(out))
		for i, j := range idx {
			sorted[i] = out[j]
		}
		out = sorted
	}
	res.Rows = make([][]sqltypes.Value, len(out))
	for i, r := range out {
		res.Rows[i] = toSQL(r.vals, outs)
	}
	return s.limit(sc, sel, res)
}

// orderValue evaluates an ORDER BY expression: a select alias, a
// position, or an expression over the source row.
func (s *session) orderValue(sc *scope, e sqlparser.Expr, outs []output, vals []engine.Value) (engine.Value, error) {
	if l, ok := e.(*sqlparser.Literal); ok && l.Type == sqlparser.IntVal {
		v, _ := sc.eval(l)
		if v.I >= 1 && int(v.I) <= len(vals) {
			return vals[v.I-1], nil
		}
	}
	if c, ok := e.(*sqlparser.ColName); ok {
		if _, found := sc.col(c.Name.String()); !found || sc.row == nil {
			for i, o := range outs {
				if strings.EqualFold(o.name, c.Name.String()) {
					return vals[i], nil
				}
			}
		}
	}
	return sc.eval(e)
}

func compareNullsFirst(a, b engine.Value) int {
	switch {
	case a.K == engine.Null && b.K == engine.Null:
		return 0
	case a.K == engine.Null:
		return -1
	case b.K == engine.Null:
		return 1
	}
	return engine.Compare(a, b)
}

func (s *session) limit(sc *scope, sel *sqlparser.Select, res *sqltypes.Result) (*sqltypes.Result, error) {
	if sel.Limit == nil {
		return res, nil
	}
	var off, n int64 = 0, int64(len(res.Rows))
	if sel.Limit.Offset != nil {
		v, err := sc.eval(sel.Limit.Offset)
		if err != nil {
			return nil, err
		}
		off, _ = v.AsInt()
	}
	if sel.Limit.Rowcount != nil {
		v, err := sc.eval(sel.Limit.Rowcount)
		if err != nil {
			return nil, err
		}
		n, _ = v.AsInt()
	}
	total := int64(len(res.Rows))
	off = min(max(off, 0), total)
	end := min(off+max(n, 0), total)
	res.Rows = res.Rows[off:end]
	return res, nil
}

func (s *session) aggregateValue(sc *scope, o output, rows [][]engine.Value) (engine.Value, error) {
	if o.aggr == nil {
		if len(rows) == 0 {
			return null, nil
		}
		sc.row = rows[0]
		return sc.eval(o.expr)
	}
	if _, ok := o.aggr.(*sqlparser.CountStar); ok {
		return engine.IntValue(int64(len(rows))), nil
	}
	var seen map[engine.Value]bool // with DISTINCT
	if da, ok := o.aggr.(sqlparser.DistinctableAggr); ok && da.IsDistinct() {
		seen = map[engine.Value]bool{}
	}
	var acc engine.Value
	var count int64
	for _, row := range rows {
		sc.row = row
		v, err := sc.eval(o.aggr.GetArg())
		if err != nil {
			return null, err
		}
		if v.K == engine.Null {
			continue
		}
		if seen != nil {
			if seen[v] {
				continue
			}
			seen[v] = true
		}
		count++
		switch o.aggr.(type) {
		case *sqlparser.Sum:
			n, _ := v.AsInt()
			acc = engine.IntValue(acc.I + n)
		case *sqlparser.Max:
			if acc.K == engine.Null || engine.Compare(v, acc) > 0 {
				acc = v
			}
		case *sqlparser.Min:
			if acc.K == engine.Null || engine.Compare(v, acc) < 0 {
				acc = v
			}
		}
	}
	if _, ok := o.aggr.(*sqlparser.Count); ok {
		return engine.IntValue(count), nil
	}
	return acc, nil
}

func toSQL(vals []engine.Value, outs []output) []sqltypes.Value {
	r := make([]sqltypes.Value, len(vals))
	for i, v := range vals {
		r[i] = sqlValue(v, outs[i].int)
	}
	return r
}

func rowKeyString(vals []engine.Value) string {
	var b strings.Builder
	for _, v := range vals {
		b.WriteByte(byte(v.K))
		b.WriteString(v.String())
		b.WriteByte(0)
	}
	return b.String()
}
