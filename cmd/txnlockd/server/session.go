package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/mysql/sqlerror"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// session is one client connection. Its statements run on the
// connection's goroutine; other sessions read the fields under mu (SHOW
// PROCESSLIST, KILL, the lock tables).
type session struct {
	srv  *Server
	conn *mysql.Conn
	id   uint32

	// Owned by the connection's goroutine.
	db           string
	autocommit   bool
	lockTimeout  time.Duration // innodb_lock_wait_timeout
	vars         map[string]engine.Value
	txn          *engine.Txn
	explicit     bool // the transaction began with BEGIN or autocommit=0
	lastInsertID int64
	prepared     map[uint32]*prepared
	watch        watcher

	// mu guards what other sessions read and KILL changes.
	mu struct {
		sync.Mutex
		user, host string
		db         string
		command    string // "Sleep", "Query"
		info       string // the running statement
		since      time.Time
		txnID      txnlock.TxnID
		txnStart   time.Time
		cancel     context.CancelCauseFunc // the running statement's, or nil
	}
}

// prepared is a statement prepared by COM_STMT_PREPARE.
type prepared struct {
	stmt   sqlparser.Statement
	digest *digest
}

var (
	errKilled       = errors.New("query execution was interrupted")
	errDisconnected = errors.New("client disconnected")
)

func newSession(srv *Server, c *mysql.Conn) *session {
	s := &session{
		srv: srv, conn: c, id: c.ConnectionID,
		autocommit:  true,
		lockTimeout: srv.opts.Engine.LockTimeout,
		vars:        map[string]engine.Value{},
		prepared:    map[uint32]*prepared{},
	}
	s.mu.command = "Sleep"
	s.mu.since = time.Now()
	return s
}

// run executes one statement and hands its result to cb.
func (s *session) run(text string, d *digest, stmt sqlparser.Statement, args map[string]engine.Value, cb func(*sqltypes.Result) error) error {
	if delay := d.delay; delay > 0 {
		time.Sleep(delay)
	}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(context.Background())
	s.mu.Lock()
	s.mu.command, s.mu.info, s.mu.since, s.mu.cancel = "Query", text, start, cancel
	s.mu.Unlock()
	s.watch.start(s.conn, cancel)

	res, err := s.exec(ctx, stmt, args)

	s.watch.stop()
	s.mu.Lock()
	s.mu.command, s.mu.info, s.mu.since, s.mu.cancel = "Sleep", "", time.Now(), nil
	s.mu.Unlock()
	cancel(nil)
	err = s.statementError(ctx, err)
	s.setStatusFlags()
	var sent, affected uint64
	if res != nil {
		sent, affected = uint64(len(res.Rows)), res.RowsAffected
	}
	d.record(time.Since(start), affected, sent, err != nil)
	if err != nil {
		return err
	}
	return cb(res)
}

// statementError turns an engine error into what MySQL returns, rolling
// the transaction back where MySQL does (a deadlock victim; a lock wait
// timeout, as with innodb_rollback_on_timeout), and counts it.
func (s *session) statementError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var le *engine.Error
	var se *sqlerror.SQLError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &le):
		return sqlerror.NewSQLError(sqlerror.ErrorCode(le.Num), le.State, le.Msg)
	case errors.Is(err, txnlock.ErrLockNoWait):
		s.srv.stats.nowait.Add(1)
		return sqlerror.NewSQLError(3572, "HY000", "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set.")
	case errors.Is(err, txnlock.ErrDeadlock):
		s.rollback()
		s.srv.stats.deadlocks.Add(1)
		return sqlerror.NewSQLError(sqlerror.ERLockDeadlock, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	case errors.Is(err, txnlock.ErrLockTimeout):
		s.rollback()
		s.srv.stats.timeouts.Add(1)
		return sqlerror.NewSQLError(sqlerror.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded; try restarting transaction")
	case context.Cause(ctx) != nil && errors.Is(err, context.Canceled):
		s.rollbackStatementTxn()
		return sqlerror.NewSQLError(sqlerror.ERQueryInterrupted, "70100", "Query execution was interrupted")
	}
	s.srv.stats.otherErrors.Add(1)
	return sqlerror.NewSQLError(sqlerror.ERUnknownError, "HY000", err.Error())
}

// rollbackStatementTxn ends an autocommit statement's transaction after a
// failure; an explicit transaction stays open (its statement wrote
// nothing: statements lock before they write).
func (s *session) rollbackStatementTxn() {
	if s.txn != nil && !s.explicit {
		s.rollback()
	}
}

// begin returns the open transaction, starting one if needed.
func (s *session) begin() (*engine.Txn, error) {
	if s.txn != nil {
		return s.txn, nil
	}
	txn, err := s.srv.eng.Begin(s.lockTimeout)
	if err != nil {
		return nil, err
	}
	s.txn = txn
	s.explicit = !s.autocommit
	s.srv.stats.begun.Add(1)
	s.mu.Lock()
	s.mu.txnID, s.mu.txnStart = txn.ID(), time.Now()
	s.mu.Unlock()
	s.srv.registerTxn(txn.ID(), s)
	return txn, nil
}

// commit commits the open transaction, if any.
func (s *session) commit() error {
	if s.txn == nil {
		return nil
	}
	txn := s.txn
	reqs := txn.LockRequests()
	explicit := s.explicit
	err := txn.Commit()
	s.endTxn(txn)
	if err != nil {
		return err
	}
	s.srv.stats.commits.Add(1)
	if explicit {
		s.srv.stats.explicitCommits.Add(1)
		s.srv.stats.explicitCommitRequests.Add(uint64(reqs))
	}
	return nil
}

// rollback rolls back the open transaction, if any.
func (s *session) rollback() {
	if s.txn == nil {
		return
	}
	txn := s.txn
	txn.Rollback()
	s.endTxn(txn)
	s.srv.stats.rollbacks.Add(1)
}

func (s *session) endTxn(txn *engine.Txn) {
	s.srv.unregisterTxn(txn.ID())
	s.txn, s.explicit = nil, false
	s.mu.Lock()
	s.mu.txnID = 0
	s.mu.Unlock()
}

// finishAutocommit commits an autocommit statement's transaction, or rolls
// it back if the statement failed.
func (s *session) finishAutocommit(err error) error {
	if s.txn == nil || s.explicit {
		return err
	}
	if err != nil {
		s.rollback()
		return err
	}
	return s.commit()
}

func (s *session) setStatusFlags() {
	f := s.conn.StatusFlags
	if s.txn != nil && s.explicit {
		f |= mysql.ServerStatusInTrans
	} else {
		f &= mysql.NoServerStatusInTrans
	}
	if s.autocommit {
		f |= mysql.ServerStatusAutocommit
	} else {
		f &= mysql.NoServerStatusAutocommit
	}
	s.conn.StatusFlags = f
}

// close ends the session: its transaction rolls back, its locks go.
func (s *session) close() {
	s.rollback()
	s.srv.stats.prepared.Add(-int64(len(s.prepared)))
}

// kill cancels the running statement; with conn, closes the connection
// too (the session's goroutine then rolls back).
func (s *session) kill(conn bool) {
	s.mu.Lock()
	cancel := s.mu.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(errKilled)
	}
	if conn {
		s.conn.Close()
	}
}

func (s *session) setDB(db string) {
	s.db = db
	s.mu.Lock()
	s.mu.db = db
	s.mu.Unlock()
}

// tableName resolves a table name against the session's database.
func (s *session) tableName(tn sqlparser.TableName) (db, name string, err error) {
	db = tn.Qualifier.String()
	if db == "" {
		db = s.db
	}
	if db == "" {
		return "", "", sqlerror.NewSQLError(sqlerror.ERNoDb, "3D000", "No database selected")
	}
	return db, tn.Name.String(), nil
}

func (s *session) table(tn sqlparser.TableName) (*engine.Table, error) {
	db, name, err := s.tableName(tn)
	if err != nil {
		return nil, err
	}
	t, ok := s.srv.eng.Table(db, name)
	if !ok {
		return nil, engine.ErrNoTable(db, name)
	}
	return t, nil
}

func lower(s string) string { return strings.ToLower(s) }
