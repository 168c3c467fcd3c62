package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/vt/sqlparser"
)

// scope is what an expression is evaluated against: a row of a table (or
// of a virtual table), bind variables, the session.
type scope struct {
	s    *session
	cols []column // nil: no FROM
	row  []engine.Value
	args map[string]engine.Value
}

// column is one column of a row source.
type column struct {
	name string
	int  bool
}

func (sc *scope) col(name string) (int, bool) {
	for i, c := range sc.cols {
		if strings.EqualFold(c.name, name) {
			return i, true
		}
	}
	return -1, false
}

var (
	null  = engine.Value{}
	one   = engine.IntValue(1)
	zero  = engine.IntValue(0)
	boolv = func(b bool) engine.Value {
		if b {
			return one
		}
		return zero
	}
)

// eval evaluates e. Booleans are 1, 0 or NULL, as in MySQL.
func (sc *scope) eval(e sqlparser.Expr) (engine.Value, error) {
	switch e := e.(type) {
	case *sqlparser.Literal:
		switch e.Type {
		case sqlparser.StrVal:
			return engine.StrValue(e.Val), nil
		case sqlparser.IntVal:
			n, err := strconv.ParseInt(e.Val, 10, 64)
			if err != nil {
				u, uerr := strconv.ParseUint(e.Val, 10, 64)
				if uerr != nil {
					return null, unsupported("integer literal " + e.Val)
				}
				n = int64(u)
			}
			return engine.IntValue(n), nil
		case sqlparser.DecimalVal, sqlparser.FloatVal:
			f, err := strconv.ParseFloat(e.Val, 64)
			if err != nil || f != float64(int64(f)) {
				return null, unsupported("non-integer number " + e.Val)
			}
			return engine.IntValue(int64(f)), nil
		}
		return null, unsupported("literal " + sqlparser.String(e))
	case *sqlparser.Argument:
		v, ok := sc.args[e.Name]
		if !ok {
			return null, fmt.Errorf("missing value for parameter %s", e.Name)
		}
		return v, nil
	case *sqlparser.NullVal:
		return null, nil
	case sqlparser.BoolVal:
		return boolv(bool(e)), nil
	case *sqlparser.ColName:
		i, ok := sc.col(e.Name.String())
		if !ok || sc.row == nil {
			return null, engine.ErrBadField(e.Name.String(), "field list")
		}
		return sc.row[i], nil
	case *sqlparser.Variable:
		return sc.s.variable(e)
	case *sqlparser.AndExpr:
		l, err := sc.eval(e.Left)
		if err != nil {
			return null, err
		}
		if isFalse(l) {
			return zero, nil
		}
		r, err := sc.eval(e.Right)
		if err != nil {
			return null, err
		}
		switch {
		case isFalse(r):
			return zero, nil
		case l.K == engine.Null || r.K == engine.Null:
			return null, nil
		}
		return one, nil
	case *sqlparser.OrExpr:
		l, err := sc.eval(e.Left)
		if err != nil {
			return null, err
		}
		if isTrue(l) {
			return one, nil
		}
		r, err := sc.eval(e.Right)
		if err != nil {
			return null, err
		}
		switch {
		case isTrue(r):
			return one, nil
		case l.K == engine.Null || r.K == engine.Null:
			return null, nil
		}
		return zero, nil
	case *sqlparser.NotExpr:
		v, err := sc.eval(e.Expr)
		if err != nil || v.K == engine.Null {
			return null, err
		}
		return boolv(isFalse(v)), nil
	case *sqlparser.ComparisonExpr:
		return sc.compare(e)
	case *sqlparser.BetweenExpr:
		v, err := sc.eval(e.Left)
		if err != nil {
			return null, err
		}
		lo, err := sc.eval(e.From)
		if err != nil {
			return null, err
		}
		hi, err := sc.eval(e.To)
		if err != nil {
			return null, err
		}
		if v.K == engine.Null || lo.K == engine.Null || hi.K == engine.Null {
			return null, nil
		}
		in := engine.Compare(v, lo) >= 0 && engine.Compare(v, hi) <= 0
		return boolv(in == e.IsBetween), nil
	case *sqlparser.IsExpr:
		v, err := sc.eval(e.Left)
		if err != nil {
			return null, err
		}
		switch e.Right {
		case sqlparser.IsNullOp:
			return boolv(v.K == engine.Null), nil
		case sqlparser.IsNotNullOp:
			return boolv(v.K != engine.Null), nil
		case sqlparser.IsTrueOp:
			return boolv(isTrue(v)), nil
		case sqlparser.IsFalseOp:
			return boolv(isFalse(v)), nil
		case sqlparser.IsNotTrueOp:
			return boolv(!isTrue(v)), nil
		case sqlparser.IsNotFalseOp:
			return boolv(!isFalse(v)), nil
		}
	case *sqlparser.BinaryExpr:
		l, err := sc.eval(e.Left)
		if err != nil {
			return null, err
		}
		r, err := sc.eval(e.Right)
		if err != nil {
			return null, err
		}
		if l.K == engine.Null || r.K == engine.Null {
			return null, nil
		}
		a, _ := l.AsInt()
		b, _ := r.AsInt()
		switch e.Operator {
		case sqlparser.PlusOp:
			return engine.IntValue(a + b), nil
		case sqlparser.MinusOp:
			return engine.IntValue(a - b), nil
		case sqlparser.MultOp:
			return engine.IntValue(a * b), nil
		case sqlparser.IntDivOp:
			if b == 0 {
				return null, nil
			}
			return engine.IntValue(a / b), nil
		case sqlparser.ModOp:
			if b == 0 {
				return null, nil
			}
			return engine.IntValue(a % b), nil
		}
	case *sqlparser.UnaryExpr:
		v, err := sc.eval(e.Expr)
		if err != nil || v.K == engine.Null {
			return null, err
		}
		n, _ := v.AsInt()
		switch e.Operator {
		case sqlparser.UMinusOp:
			return engine.IntValue(-n), nil
		case sqlparser.UPlusOp:
			return engine.IntValue(n), nil
		}
	case *sqlparser.FuncExpr:
		if lower(e.Name.String()) != "concat" {
			return sc.s.function(e)
		}
		var b strings.Builder
		for _, a := range e.Exprs {
			v, err := sc.eval(a)
			if err != nil || v.K == engine.Null {
				return null, err
			}
			b.WriteString(v.String())
		}
		return engine.StrValue(b.String()), nil
	}
	return null, unsupported("expression " + sqlparser.String(e))
}

func isTrue(v engine.Value) bool {
	if v.K == engine.Null {
		return false
	}
	n, _ := v.AsInt()
	return n != 0
}

func isFalse(v engine.Value) bool { return v.K != engine.Null && !isTrue(v) }

func (sc *scope) compare(e *sqlparser.ComparisonExpr) (engine.Value, error) {
	l, err := sc.eval(e.Left)
	if err != nil {
		return null, err
	}
	switch e.Operator {
	case sqlparser.InOp, sqlparser.NotInOp:
		tuple, ok := e.Right.(sqlparser.ValTuple)
		if !ok {
			return null, unsupported("IN with a subquery")
		}
		if l.K == engine.Null {
			return null, nil
		}
		found, sawNull := false, false
		for _, x := range tuple {
			v, err := sc.eval(x)
			if err != nil {
				return null, err
			}
			if v.K == engine.Null {
				sawNull = true
				continue
			}
			if engine.Compare(l, v) == 0 {
				found = true
				break
			}
		}
		if !found && sawNull {
			return null, nil
		}
		return boolv(found == (e.Operator == sqlparser.InOp)), nil
	}
	r, err := sc.eval(e.Right)
	if err != nil {
		return null, err
	}
	if e.Operator == sqlparser.NullSafeEqualOp {
		if l.K == engine.Null || r.K == engine.Null {
			return boolv(l.K == r.K), nil
		}
		return boolv(engine.Compare(l, r) == 0), nil
	}
	if l.K == engine.Null || r.K == engine.Null {
		return null, nil
	}
	switch e.Operator {
	case sqlparser.LikeOp, sqlparser.NotLikeOp:
		m := likeMatch(r.String(), l.String()) && (r.String() != "" || l.String() == "")
		return boolv(m == (e.Operator == sqlparser.LikeOp)), nil
	}
	c := engine.Compare(l, r)
	switch e.Operator {
	case sqlparser.EqualOp:
		return boolv(c == 0), nil
	case sqlparser.NotEqualOp:
		return boolv(c != 0), nil
	case sqlparser.LessThanOp:
		return boolv(c < 0), nil
	case sqlparser.LessEqualOp:
		return boolv(c <= 0), nil
	case sqlparser.GreaterThanOp:
		return boolv(c > 0), nil
	case sqlparser.GreaterEqualOp:
		return boolv(c >= 0), nil
	}
	return null, unsupported("operator " + e.Operator.ToString())
}

// constant reports whether e needs no row.
func constant(e sqlparser.Expr) bool {
	c := true
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.ColName, sqlparser.AggrFunc:
			c = false
		}
		return c, nil
	}, e)
	return c
}

// unsupported is the error of a statement or clause the server does not run.
func unsupported(what string) error { return engine.ErrUnsupported(what) }
