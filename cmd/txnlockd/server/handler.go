package server

import (
	"net"
	"strings"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/mysql/sqlerror"
	"vitess.io/vitess/go/sqltypes"
	querypb "vitess.io/vitess/go/vt/proto/query"
	"vitess.io/vitess/go/vt/sqlparser"
)

// The vitess mysql.Handler methods: the protocol calls them on each
// connection's own goroutine.

// NewConnection registers the connection's session.
func (s *Server) NewConnection(c *mysql.Conn) {
	s.stats.conns.Add(1)
	s.stats.connections.Add(1)
	ss := newSession(s, c)
	c.ClientData = ss
	c.StatusFlags |= mysql.ServerStatusAutocommit
	s.mu.Lock()
	s.sessions[ss.id] = ss
	s.mu.Unlock()
}

// ConnectionReady records who connected.
func (s *Server) ConnectionReady(c *mysql.Conn) {
	ss := c.ClientData.(*session)
	host := ""
	if a := c.RemoteAddr(); a != nil {
		host = a.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	ss.mu.Lock()
	ss.mu.user, ss.mu.host = c.User, host
	ss.mu.Unlock()
}

// ConnectionClosed rolls back the session's transaction, releasing its
// locks, and forgets the session.
func (s *Server) ConnectionClosed(c *mysql.Conn) {
	ss := c.ClientData.(*session)
	ss.close()
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	s.stats.conns.Done()
}

// parse parses one statement (a SERIAL column type rewritten first).
// Trailing NUL bytes, which mysqlslap sends after its statements, are
// dropped, as MySQL's parser stops at the first one.
func (s *Server) parse(sql string) (sqlparser.Statement, int, error) {
	sql = strings.TrimRight(sql, "\x00")
	stmt, vars, err := s.parser.Parse2(rewriteSerial(s.parser, sql))
	if err != nil {
		return nil, 0, sqlerror.NewSQLError(sqlerror.ERParseError, "42000", err.Error())
	}
	return stmt, len(vars), nil
}

// ComQuery runs a text-protocol statement.
func (s *Server) ComQuery(c *mysql.Conn, query string, callback func(*sqltypes.Result) error) error {
	ss := c.ClientData.(*session)
	query = strings.TrimRight(query, "\x00")
	stmt, _, err := s.parse(query)
	if err != nil {
		return err
	}
	return ss.run(query, s.digests.get(normalize(s.parser, query)), stmt, nil, callback)
}

// ComQueryMulti is not used: the listener runs one statement per call.
func (s *Server) ComQueryMulti(c *mysql.Conn, sql string, callback func(qr sqltypes.QueryResponse, more bool, firstPacket bool) error) error {
	return sqlerror.NewSQLError(sqlerror.ERNotSupportedYet, "42000", "multi-statement queries are not supported")
}

// ComPrepare parses a statement for COM_STMT_EXECUTE: it returns its
// parameter count and, for a SELECT, its result columns.
func (s *Server) ComPrepare(c *mysql.Conn, query string) ([]*querypb.Field, uint16, error) {
	ss := c.ClientData.(*session)
	stmt, n, err := s.parse(query)
	if err != nil {
		return nil, 0, err
	}
	// The listener numbers prepared statements after this call returns,
	// and forgets those the client closed (COM_STMT_CLOSE): forget them too.
	if len(ss.prepared) > len(c.PrepareData)+16 {
		for id := range ss.prepared {
			if _, ok := c.PrepareData[id]; !ok {
				delete(ss.prepared, id)
				s.stats.prepared.Add(-1)
			}
		}
	}
	ss.prepared[c.StatementID+1] = &prepared{stmt: stmt, digest: s.digests.get(normalize(s.parser, query))}
	s.stats.prepared.Add(1)
	var fs []*querypb.Field
	if sel, ok := stmt.(*sqlparser.Select); ok {
		if src, err := ss.source(sel); err == nil {
			if outs, err := outputs(sel, src.cols); err == nil {
				fs = fields(outs)
			}
		}
	}
	return fs, uint16(n), nil
}

// ComStmtExecute runs a prepared statement with its parameters.
func (s *Server) ComStmtExecute(c *mysql.Conn, prep *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	ss := c.ClientData.(*session)
	p, ok := ss.prepared[prep.StatementID]
	if !ok {
		return sqlerror.NewSQLErrorf(sqlerror.ERUnknownStmtHandler, "HY000", "Unknown prepared statement handler (%d) given to mysqld_stmt_execute", prep.StatementID)
	}
	args := make(map[string]engine.Value, len(prep.BindVars))
	for name, bv := range prep.BindVars {
		v, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return err
		}
		switch {
		case v.IsNull():
			args[name] = engine.Value{}
		case v.IsIntegral():
			n, err := v.ToInt64()
			if err != nil {
				u, uerr := v.ToUint64()
				if uerr != nil {
					return err
				}
				n = int64(u)
			}
			args[name] = engine.IntValue(n)
		default:
			args[name] = engine.StrValue(v.ToString())
		}
	}
	return ss.run(prep.PrepareStmt, p.digest, p.stmt, args, callback)
}

// WarningCount: the server raises no warnings.
func (s *Server) WarningCount(c *mysql.Conn) uint16 { return 0 }

// ComResetConnection rolls back and resets the session.
func (s *Server) ComResetConnection(c *mysql.Conn) {
	ss := c.ClientData.(*session)
	ss.rollback()
	ss.autocommit, ss.lockTimeout = true, s.opts.Engine.LockTimeout
	ss.vars = map[string]engine.Value{}
	s.stats.prepared.Add(-int64(len(ss.prepared)))
	ss.prepared = map[uint32]*prepared{}
}

// ComRegisterReplica, ComBinlogDump and ComBinlogDumpGTID: replication is
// not served.
func (s *Server) ComRegisterReplica(c *mysql.Conn, replicaHost string, replicaPort uint16, replicaUser string, replicaPassword string) error {
	return errNoReplication
}

// ComBinlogDump: see ComRegisterReplica.
func (s *Server) ComBinlogDump(c *mysql.Conn, logFile string, binlogPos uint32) error {
	return errNoReplication
}

// ComBinlogDumpGTID: see ComRegisterReplica.
func (s *Server) ComBinlogDumpGTID(c *mysql.Conn, logFile string, logPos uint64, gtidSet replication.GTIDSet, flags uint16) error {
	return errNoReplication
}

var errNoReplication = sqlerror.NewSQLError(sqlerror.ERNotSupportedYet, "42000", "replication is not supported")
