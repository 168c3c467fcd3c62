package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/mysql/sqlerror"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// sysVars are the system variables a session can read, with their
// defaults; those with settable true can be SET (for the session). Most
// exist so that clients' connection set-up works; the ones the server
// acts on are autocommit, innodb_lock_wait_timeout and the isolation
// level (READ COMMITTED only: every read sees the latest committed rows
// and the transaction's own writes).
var sysVars = map[string]struct {
	def      engine.Value
	settable bool
}{
	"autocommit":               {one, true},
	"innodb_lock_wait_timeout": {engine.IntValue(50), true},
	"transaction_isolation":    {engine.StrValue("READ-COMMITTED"), true},
	"tx_isolation":             {engine.StrValue("READ-COMMITTED"), true},
	"transaction_read_only":    {zero, false},
	"tx_read_only":             {zero, false},
	"version":                  {engine.StrValue(Version), false},
	"version_comment":          {engine.StrValue("txnlockd: txnlock lock managers on Pebble"), false},
	"max_allowed_packet":       {engine.IntValue(64 << 20), false},
	"sql_mode":                 {engine.StrValue("STRICT_TRANS_TABLES"), true},
	"character_set_client":     {engine.StrValue("utf8mb4"), true},
	"character_set_connection": {engine.StrValue("utf8mb4"), true},
	"character_set_results":    {engine.StrValue("utf8mb4"), true},
	"character_set_server":     {engine.StrValue("utf8mb4"), false},
	"collation_connection":     {engine.StrValue("utf8mb4_bin"), true},
	"collation_server":         {engine.StrValue("utf8mb4_bin"), false},
	"time_zone":                {engine.StrValue("SYSTEM"), true},
	"system_time_zone":         {engine.StrValue("UTC"), false},
	"wait_timeout":             {engine.IntValue(28800), true},
	"interactive_timeout":      {engine.IntValue(28800), true},
	"net_write_timeout":        {engine.IntValue(60), true},
	"net_read_timeout":         {engine.IntValue(30), true},
	"sql_select_limit":         {engine.IntValue(1<<63 - 1), true},
	"max_execution_time":       {zero, true},
	"lower_case_table_names":   {zero, false},
	"auto_increment_increment": {one, false},
	"auto_increment_offset":    {one, false},
	"innodb_autoinc_lock_mode": {zero, false},
	"license":                  {engine.StrValue("Apache-2.0"), false},
	"performance_schema":       {zero, false},
	"sql_auto_is_null":         {zero, false},
	"sql_safe_updates":         {zero, true},
	"unique_checks":            {one, true},
	"foreign_key_checks":       {one, true},
	"names":                    {engine.StrValue("utf8mb4"), true},
}

// variable reads @@name or a user variable.
func (s *session) variable(v *sqlparser.Variable) (engine.Value, error) {
	name := lower(v.Name.String())
	if v.Scope == sqlparser.VariableScope {
		if x, ok := s.vars["@"+name]; ok {
			return x, nil
		}
		return null, nil
	}
	switch name {
	case "autocommit":
		return boolv(s.autocommit), nil
	case "innodb_lock_wait_timeout":
		return engine.IntValue(int64(s.lockTimeout / time.Second)), nil
	case "innodb_autoinc_lock_mode":
		return engine.IntValue(int64(s.srv.opts.Engine.AutoIncMode)), nil
	}
	if x, ok := s.vars[name]; ok {
		return x, nil
	}
	sv, ok := sysVars[name]
	if !ok {
		return null, sqlerror.NewSQLErrorf(sqlerror.ERUnknownSystemVariable, "HY000", "Unknown system variable '%s'", name)
	}
	return sv.def, nil
}

func (s *session) execSet(st *sqlparser.Set, args map[string]engine.Value) (*sqltypes.Result, error) {
	sc := &scope{s: s, args: args}
	for _, e := range st.Exprs {
		name := lower(e.Var.Name.String())
		var v engine.Value
		if c, ok := e.Expr.(*sqlparser.ColName); ok { // SET x = ON, SET NAMES utf8 (an identifier)
			v = engine.StrValue(c.Name.String())
		} else {
			var err error
			if v, err = sc.eval(e.Expr); err != nil {
				return nil, err
			}
		}
		if e.Var.Scope == sqlparser.VariableScope {
			s.vars["@"+name] = v
			continue
		}
		if e.Var.Scope == sqlparser.GlobalScope || e.Var.Scope == sqlparser.PersistSysScope || e.Var.Scope == sqlparser.PersistOnlySysScope {
			return nil, unsupported("SET GLOBAL or PERSIST")
		}
		sv, ok := sysVars[name]
		if !ok {
			return nil, sqlerror.NewSQLErrorf(sqlerror.ERUnknownSystemVariable, "HY000", "Unknown system variable '%s'", name)
		}
		if !sv.settable {
			return nil, sqlerror.NewSQLErrorf(sqlerror.ERIncorrectGlobalLocalVar, "HY000", "Variable '%s' is a read only variable", name)
		}
		switch name {
		case "autocommit":
			on := isTrue(v) || strings.EqualFold(v.S, "on")
			if on && !s.autocommit {
				// Turning autocommit on commits the open transaction.
				if err := s.commit(); err != nil {
					return nil, err
				}
			}
			s.autocommit = on
			if !on && s.txn != nil {
				s.explicit = true
			}
		case "innodb_lock_wait_timeout":
			n, ok := v.AsInt()
			if !ok || n < 1 || n > 1<<30 {
				return nil, sqlerror.NewSQLErrorf(sqlerror.ERWrongValueForVar, "42000", "Variable 'innodb_lock_wait_timeout' can't be set to the value of '%v'", v)
			}
			s.lockTimeout = time.Duration(n) * time.Second
			if s.txn != nil {
				if err := s.txn.SetLockTimeout(s.lockTimeout); err != nil {
					return nil, err
				}
			}
		case "transaction_isolation", "tx_isolation":
			lvl := strings.ToUpper(strings.ReplaceAll(v.String(), " ", "-"))
			if lvl != "READ-COMMITTED" {
				return nil, unsupported(fmt.Sprintf("isolation level %s (txnlockd runs READ COMMITTED)", lvl))
			}
			s.vars["transaction_isolation"], s.vars["tx_isolation"] = engine.StrValue(lvl), engine.StrValue(lvl)
		default:
			s.vars[name] = v
		}
	}
	return &sqltypes.Result{}, nil
}

// function evaluates the functions clients call on connect.
func (s *session) function(f *sqlparser.FuncExpr) (engine.Value, error) {
	switch lower(f.Name.String()) {
	case "database", "schema":
		if s.db == "" {
			return null, nil
		}
		return engine.StrValue(s.db), nil
	case "connection_id":
		return engine.IntValue(int64(s.id)), nil
	case "last_insert_id":
		return engine.IntValue(s.lastInsertID), nil
	case "version":
		return engine.StrValue(Version), nil
	case "user", "current_user", "session_user", "system_user":
		s.mu.Lock()
		defer s.mu.Unlock()
		return engine.StrValue(s.mu.user + "@" + s.mu.host), nil
	}
	return null, unsupported("function " + f.Name.String())
}
