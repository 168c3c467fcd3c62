package server

import (
	"context"
	"math"
	"slices"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/vt/sqlparser"
)

// An access path: how a statement finds its rows in a table, chosen from
// its WHERE clause.
//
//	keys     the clustered key = / IN                → a read per key
//	ranges   the clustered key BETWEEN, <, >, OR …   → a scan per range
//	index    an index's first column = / IN / BETWEEN → an index scan per range
//	full     anything else                            → a scan of the table
//
// The WHERE clause is evaluated on every row found, whatever the path.
// Locking reads lock what the path reads (see engine.Txn): a key or the
// rows found (point locking), a key, a key range or an index range with
// its gaps (range locking), the whole table's key range for a full scan.
type access struct {
	full   bool
	keys   []int64
	ranges [][2]int64
	index  *engine.Index
	ivals  [][2]engine.Value
}

// interval is a closed interval of values; a missing bound is infinite.
type interval struct {
	lo, hi       engine.Value
	hasLo, hasHi bool
}

// intervals returns the values col may take for e to hold, if e says.
func (sc *scope) intervals(e sqlparser.Expr, col string) ([]interval, bool) {
	isCol := func(x sqlparser.Expr) bool {
		c, ok := x.(*sqlparser.ColName)
		return ok && c.Name.EqualString(col)
	}
	val := func(x sqlparser.Expr) (engine.Value, bool) {
		if !constant(x) {
			return null, false
		}
		v, err := sc.eval(x)
		return v, err == nil && v.K != engine.Null
	}
	switch e := e.(type) {
	case *sqlparser.AndExpr:
		if iv, ok := sc.intervals(e.Left, col); ok {
			return iv, true
		}
		return sc.intervals(e.Right, col)
	case *sqlparser.OrExpr:
		a, ok := sc.intervals(e.Left, col)
		if !ok {
			return nil, false
		}
		b, ok := sc.intervals(e.Right, col)
		return append(a, b...), ok
	case *sqlparser.BetweenExpr:
		if !e.IsBetween || !isCol(e.Left) {
			return nil, false
		}
		lo, ok1 := val(e.From)
		hi, ok2 := val(e.To)
		if !ok1 || !ok2 {
			return nil, false
		}
		return []interval{{lo: lo, hi: hi, hasLo: true, hasHi: true}}, true
	case *sqlparser.ComparisonExpr:
		op, l, r := e.Operator, e.Left, e.Right
		if !isCol(l) && isCol(r) {
			l, r = r, l
			switch op {
			case sqlparser.LessThanOp:
				op = sqlparser.GreaterThanOp
			case sqlparser.GreaterThanOp:
				op = sqlparser.LessThanOp
			case sqlparser.LessEqualOp:
				op = sqlparser.GreaterEqualOp
			case sqlparser.GreaterEqualOp:
				op = sqlparser.LessEqualOp
			}
		}
		if !isCol(l) {
			return nil, false
		}
		if op == sqlparser.InOp {
			tuple, ok := r.(sqlparser.ValTuple)
			if !ok {
				return nil, false
			}
			var out []interval
			for _, x := range tuple {
				v, ok := val(x)
				if !ok {
					return nil, false
				}
				out = append(out, interval{lo: v, hi: v, hasLo: true, hasHi: true})
			}
			return out, true
		}
		v, ok := val(r)
		if !ok {
			return nil, false
		}
		switch op {
		case sqlparser.EqualOp:
			return []interval{{lo: v, hi: v, hasLo: true, hasHi: true}}, true
		case sqlparser.LessThanOp, sqlparser.LessEqualOp:
			return []interval{{hi: v, hasHi: true}}, true
		case sqlparser.GreaterThanOp, sqlparser.GreaterEqualOp:
			return []interval{{lo: v, hasLo: true}}, true
		}
	}
	return nil, false
}

// plan chooses the access path for where on t.
func (sc *scope) plan(t *engine.Table, where sqlparser.Expr) access {
	if where == nil {
		return access{full: true}
	}
	if t.Key >= 0 {
		if ivs, ok := sc.intervals(where, t.Columns[t.Key].Name); ok {
			return keyAccess(ivs)
		}
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		ivs, ok := sc.intervals(where, t.Columns[ix.Cols[0]].Name)
		if !ok {
			continue
		}
		a := access{index: ix}
		bounded := true
		for _, iv := range ivs {
			if !iv.hasLo || !iv.hasHi {
				bounded = false
				break
			}
			if t.Columns[ix.Cols[0]].Int {
				iv.lo, iv.hi = asIntValue(iv.lo), asIntValue(iv.hi)
			} else {
				iv.lo, iv.hi = engine.StrValue(iv.lo.String()), engine.StrValue(iv.hi.String())
			}
			if engine.Compare(iv.lo, iv.hi) <= 0 {
				a.ivals = append(a.ivals, [2]engine.Value{iv.lo, iv.hi})
			}
		}
		if bounded {
			a.ivals = mergeValues(a.ivals)
			return a
		}
	}
	return access{full: true}
}

func asIntValue(v engine.Value) engine.Value {
	n, _ := v.AsInt()
	return engine.IntValue(n)
}

// keyAccess turns intervals of the clustered key into keys or ranges.
func keyAccess(ivs []interval) access {
	var rs [][2]int64
	points := true
	for _, iv := range ivs {
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if iv.hasLo {
			lo, _ = iv.lo.AsInt()
		}
		if iv.hasHi {
			hi, _ = iv.hi.AsInt()
		}
		if lo > hi {
			continue
		}
		points = points && lo == hi
		rs = append(rs, [2]int64{lo, hi})
	}
	slices.SortFunc(rs, func(a, b [2]int64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	var merged [][2]int64
	for _, r := range rs {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	if points || len(merged) == 0 {
		a := access{keys: []int64{}}
		for _, r := range merged {
			a.keys = append(a.keys, r[0])
		}
		return a
	}
	return access{ranges: merged}
}

func mergeValues(ivs [][2]engine.Value) [][2]engine.Value {
	slices.SortFunc(ivs, func(a, b [2]engine.Value) int { return engine.Compare(a[0], b[0]) })
	var out [][2]engine.Value
	for _, iv := range ivs {
		if n := len(out); n > 0 && engine.Compare(iv[0], out[n-1][1]) <= 0 {
			if engine.Compare(iv[1], out[n-1][1]) > 0 {
				out[n-1][1] = iv[1]
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// visit reads the rows the path finds, with lock, until fn returns false.
func (a access) visit(ctx context.Context, txn *engine.Txn, t *engine.Table, lock engine.ReadLock, fn func(key int64, row []engine.Value) bool) error {
	switch {
	case a.keys != nil:
		for _, k := range a.keys {
			row, found, err := txn.Get(ctx, t, k, lock)
			if err != nil {
				return err
			}
			if found && !fn(k, row) {
				return nil
			}
		}
		return nil
	case a.ranges != nil:
		stop := false
		for _, r := range a.ranges {
			kr, err := engine.KeyRange(t, r[0], r[1])
			if err != nil {
				return err
			}
			if err := txn.Scan(ctx, t, kr, lock, func(k int64, row []engine.Value) bool {
				stop = !fn(k, row)
				return !stop
			}); err != nil || stop {
				return err
			}
		}
		return nil
	case a.index != nil:
		stop := false
		for _, iv := range a.ivals {
			if err := txn.ScanIndex(ctx, t, a.index, iv[0], iv[1], lock, func(k int64, row []engine.Value) bool {
				stop = !fn(k, row)
				return !stop
			}); err != nil || stop {
				return err
			}
		}
		return nil
	}
	return txn.Scan(ctx, t, engine.AllKeys(t), lock, fn)
}
