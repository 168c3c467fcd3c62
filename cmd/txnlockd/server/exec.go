package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/mysql/sqlerror"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// exec runs one parsed statement.
func (s *session) exec(ctx context.Context, stmt sqlparser.Statement, args map[string]engine.Value) (*sqltypes.Result, error) {
	switch st := stmt.(type) {
	case *sqlparser.Select:
		return s.execSelect(ctx, st, args)
	case *sqlparser.Insert:
		return s.execInsert(ctx, st, args)
	case *sqlparser.Update:
		return s.execUpdate(ctx, st, args)
	case *sqlparser.Delete:
		return s.execDelete(ctx, st, args)
	case *sqlparser.Begin:
		for _, m := range st.TxAccessModes {
			if m != sqlparser.ReadWrite {
				return nil, unsupported("START TRANSACTION " + m.ToString())
			}
		}
		// BEGIN commits an open transaction, as MySQL does.
		if err := s.commit(); err != nil {
			return nil, err
		}
		if _, err := s.begin(); err != nil {
			return nil, err
		}
		s.explicit = true
		return &sqltypes.Result{}, nil
	case *sqlparser.Commit:
		return &sqltypes.Result{}, s.commit()
	case *sqlparser.Rollback:
		s.rollback()
		return &sqltypes.Result{}, nil
	case *sqlparser.Set:
		return s.execSet(st, args)
	case *sqlparser.Show:
		return s.execShow(st)
	case *sqlparser.Use:
		db := st.DBName.String()
		if !s.srv.eng.HasDB(db) {
			return nil, sqlerror.NewSQLErrorf(sqlerror.ERBadDb, "42000", "Unknown database '%s'", db)
		}
		s.setDB(db)
		return &sqltypes.Result{}, nil
	case *sqlparser.CreateDatabase, *sqlparser.DropDatabase, *sqlparser.CreateTable, *sqlparser.DropTable, *sqlparser.AlterTable:
		return s.execDDL(stmt)
	case *sqlparser.Kill:
		return s.execKill(st)
	case *sqlparser.CommentOnly:
		return &sqltypes.Result{}, nil
	}
	return nil, unsupported(statementName(stmt))
}

// statementName names a statement kind for errors: "ALTER VIEW".
func statementName(stmt sqlparser.Statement) string {
	t := fmt.Sprintf("%T", stmt)
	t = strings.TrimPrefix(t, "*sqlparser.")
	var b strings.Builder
	for i, r := range t {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

func errColumnCount(row int) error {
	return sqlerror.NewSQLErrorf(sqlerror.ERWrongValueCountOnRow, "21S01", "Column count doesn't match value count at row %d", row)
}

func (s *session) execKill(k *sqlparser.Kill) (*sqltypes.Result, error) {
	target := s.srv.session(uint32(k.ProcesslistID))
	if target == nil {
		return nil, sqlerror.NewSQLErrorf(sqlerror.ERNoSuchThread, "HY000", "Unknown thread id: %d", k.ProcesslistID)
	}
	target.kill(k.Type == sqlparser.ConnectionType)
	return &sqltypes.Result{}, nil
}
