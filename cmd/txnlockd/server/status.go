package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
)

// counters are the server's SHOW STATUS LIKE 'txnlock%' counters.
type counters struct {
	connections            atomic.Uint64
	begun                  atomic.Uint64
	commits                atomic.Uint64
	rollbacks              atomic.Uint64
	explicitCommits        atomic.Uint64 // transactions begun by BEGIN or autocommit=0, committed
	explicitCommitRequests atomic.Uint64 // their lock requests
	deadlocks              atomic.Uint64 // 1213 returned
	timeouts               atomic.Uint64 // 1205 returned
	nowait                 atomic.Uint64 // 3572 returned
	otherErrors            atomic.Uint64
	prepared               atomic.Int64 // prepared statements the sessions keep
	conns                  sync.WaitGroup
}

// registry: sessions by connection id and by transaction id.
var txnSessions sync.Map // txnlock.TxnID → *session

func (s *Server) registerTxn(id txnlock.TxnID, ss *session) { txnSessions.Store(id, ss) }
func (s *Server) unregisterTxn(id txnlock.TxnID)            { txnSessions.Delete(id) }

func (s *Server) threadOf(id txnlock.TxnID) int64 {
	if v, ok := txnSessions.Load(id); ok {
		return int64(v.(*session).id)
	}
	return 0
}

func (s *Server) session(id uint32) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) waitSessions() { s.stats.conns.Wait() }

// statusRows are the counters, by name.
func (s *Server) statusRows() [][2]string {
	st := s.eng.Manager().Stats()
	ds := s.eng.Detector().Stats()
	s.mu.Lock()
	sessions := len(s.sessions)
	s.mu.Unlock()
	open := 0
	s.txns.Range(func(_, _ any) bool { open++; return true })
	c := &s.stats
	return [][2]string{
		{"Txnlock_connections", fmt.Sprint(c.connections.Load())},
		{"Txnlock_sessions", fmt.Sprint(sessions)},
		{"Txnlock_open_transactions", fmt.Sprint(open)},
		{"Txnlock_transactions", fmt.Sprint(c.begun.Load())},
		{"Txnlock_commits", fmt.Sprint(c.commits.Load())},
		{"Txnlock_rollbacks", fmt.Sprint(c.rollbacks.Load())},
		{"Txnlock_explicit_commits", fmt.Sprint(c.explicitCommits.Load())},
		{"Txnlock_explicit_commit_lock_requests", fmt.Sprint(c.explicitCommitRequests.Load())},
		{"Txnlock_deadlock_errors", fmt.Sprint(c.deadlocks.Load())},
		{"Txnlock_lock_wait_timeout_errors", fmt.Sprint(c.timeouts.Load())},
		{"Txnlock_nowait_errors", fmt.Sprint(c.nowait.Load())},
		{"Txnlock_other_errors", fmt.Sprint(c.otherErrors.Load())},
		{"Txnlock_prepared_statements", fmt.Sprint(c.prepared.Load())},
		{"Txnlock_lock_acquired", fmt.Sprint(st.Acquired)},
		{"Txnlock_lock_released", fmt.Sprint(st.Released)},
		{"Txnlock_lock_waited", fmt.Sprint(st.Waited)},
		{"Txnlock_lock_wait_time_us", fmt.Sprint(st.WaitTime.Microseconds())},
		{"Txnlock_lock_timeouts", fmt.Sprint(st.Timeouts)},
		{"Txnlock_lock_deadlocks", fmt.Sprint(st.Deadlocks)},
		{"Txnlock_lock_canceled", fmt.Sprint(st.Canceled)},
		{"Txnlock_current_locks", fmt.Sprint(st.CurrentLocks)},
		{"Txnlock_waiting", fmt.Sprint(st.Waiting)},
		{"Txnlock_escalations", fmt.Sprint(st.Escalations)},
		{"Txnlock_lock_memory", fmt.Sprint(st.LockMemory)},
		{"Txnlock_detector", ds.String()},
	}
}

func (s *session) execShow(sh *sqlparser.Show) (*sqltypes.Result, error) {
	switch in := sh.Internal.(type) {
	case *sqlparser.ShowEngine:
		if lower(in.EngineName) != "innodb" || lower(in.Action) != "status" {
			return nil, unsupported("SHOW ENGINE " + in.EngineName + " " + in.Action)
		}
		return textResult([]string{"Type", "Name", "Status"}, [][]string{{"InnoDB", "", s.srv.innodbStatus()}}), nil
	case *sqlparser.ShowBasic:
		like := ""
		if in.Filter != nil {
			if in.Filter.Filter != nil {
				return nil, unsupported("SHOW … WHERE")
			}
			like = in.Filter.Like
		}
		switch in.Command {
		case sqlparser.StatusGlobal, sqlparser.StatusSession:
			var rows [][]string
			for _, r := range s.srv.statusRows() {
				if likeMatch(like, r[0]) {
					rows = append(rows, []string{r[0], r[1]})
				}
			}
			return textResult([]string{"Variable_name", "Value"}, rows), nil
		case sqlparser.VariableGlobal, sqlparser.VariableSession:
			var rows [][]string
			names := make([]string, 0, len(sysVars))
			for n := range sysVars {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				if likeMatch(like, n) {
					v, _ := s.variable(&sqlparser.Variable{Scope: sqlparser.SessionScope, Name: sqlparser.NewIdentifierCI(n)})
					rows = append(rows, []string{n, v.String()})
				}
			}
			return textResult([]string{"Variable_name", "Value"}, rows), nil
		case sqlparser.Database:
			var rows [][]string
			dbs := s.srv.eng.DBs()
			slices.Sort(dbs)
			for _, d := range dbs {
				if likeMatch(like, d) {
					rows = append(rows, []string{d})
				}
			}
			return textResult([]string{"Database"}, rows), nil
		case sqlparser.Table:
			db := in.DbName.String()
			if db == "" {
				db = s.db
			}
			var rows [][]string
			for _, t := range s.srv.eng.Tables(db) {
				if likeMatch(like, t.Name) {
					rows = append(rows, []string{t.Name})
				}
			}
			slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
			return textResult([]string{"Tables_in_" + db}, rows), nil
		case sqlparser.ProcessList:
			return s.srv.processList(in.Full), nil
		case sqlparser.Warnings, sqlparser.Errors:
			return textResult([]string{"Level", "Code", "Message"}, nil), nil
		}
	}
	return nil, unsupported(sqlparser.String(sh))
}

// likeMatch is SQL LIKE with % and _, case-insensitive (SHOW's patterns
// and the LIKE operator); "" matches all.
func likeMatch(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	p, t := []rune(strings.ToLower(pattern)), []rune(strings.ToLower(s))
	var m func(i, j int) bool
	m = func(i, j int) bool {
		for i < len(p) {
			switch p[i] {
			case '%':
				for k := j; k <= len(t); k++ {
					if m(i+1, k) {
						return true
					}
				}
				return false
			case '_':
				if j >= len(t) {
					return false
				}
			case '\\':
				if i+1 < len(p) {
					i++
				}
				fallthrough
			default:
				if j >= len(t) || t[j] != p[i] {
					return false
				}
			}
			i++
			j++
		}
		return j == len(t)
	}
	return m(0, 0)
}

func textResult(cols []string, rows [][]string) *sqltypes.Result {
	res := &sqltypes.Result{}
	for _, c := range cols {
		res.Fields = append(res.Fields, fields([]output{{name: c}})[0])
	}
	for _, r := range rows {
		row := make([]sqltypes.Value, len(r))
		for i, v := range r {
			row[i] = sqltypes.NewVarChar(v)
		}
		res.Rows = append(res.Rows, row)
	}
	return res
}

// processList is SHOW PROCESSLIST.
func (s *Server) processList(full bool) *sqltypes.Result {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b *session) int { return int(a.id) - int(b.id) })
	var rows [][]string
	now := time.Now()
	for _, ss := range list {
		ss.mu.Lock()
		info := ss.mu.info
		if !full && len(info) > 100 {
			info = info[:100]
		}
		state := ""
		if ss.mu.command == "Query" {
			state = "executing"
		}
		rows = append(rows, []string{fmt.Sprint(ss.id), ss.mu.user, ss.mu.host, ss.mu.db, ss.mu.command,
			fmt.Sprint(int(now.Sub(ss.mu.since).Seconds())), state, info, fmt.Sprint(uint64(ss.mu.txnID))})
		ss.mu.Unlock()
	}
	return textResult([]string{"Id", "User", "Host", "db", "Command", "Time", "State", "Info", "Trx_id"}, rows)
}

// virtualTable returns the server's read-only tables: the lock tables
// (performance_schema.data_locks, data_lock_waits), the transactions
// (information_schema.innodb_trx), the digests
// (stats.stats_mysql_query_digest, ProxySQL's shape) and the processlist.
func (s *session) virtualTable(tn sqlparser.TableName) (source, bool) {
	q, n := lower(tn.Qualifier.String()), lower(tn.Name.String())
	srv := s.srv
	switch {
	case q == "performance_schema" && n == "data_locks":
		return srv.dataLocks(), true
	case q == "performance_schema" && n == "data_lock_waits":
		return srv.dataLockWaits(), true
	case q == "information_schema" && n == "innodb_trx":
		return srv.innodbTrx(), true
	case q == "stats" && n == "stats_mysql_query_digest":
		return srv.digests.source(), true
	case q == "txnlock" && n == "table_check":
		src, err := srv.tableCheck()
		return src, err == nil
	case q == "information_schema" && n == "processlist":
		res := srv.processList(true)
		src := source{}
		for _, f := range res.Fields {
			src.cols = append(src.cols, column{name: f.Name})
		}
		for _, r := range res.Rows {
			row := make([]engine.Value, len(r))
			for i, v := range r {
				row[i] = engine.StrValue(v.ToString())
			}
			src.rows = append(src.rows, row)
		}
		return src, true
	}
	return source{}, false
}

// tableCheck is txnlock.table_check: per table and index, the rows and
// the index entries found, missing and extra (MySQL's CHECK TABLE, which
// vitess' grammar lacks).
func (s *Server) tableCheck() (source, error) {
	src := source{cols: strCols("TABLE_SCHEMA", "TABLE_NAME", "ROWS", "INDEX_NAME", "ENTRIES", "MISSING", "EXTRA")}
	for _, i := range []int{2, 4, 5, 6} {
		src.cols[i].int = true
	}
	var tables []*engine.Table
	for _, db := range s.eng.DBs() {
		tables = append(tables, s.eng.Tables(db)...)
	}
	slices.SortFunc(tables, func(a, b *engine.Table) int { return strings.Compare(a.DB+"."+a.Name, b.DB+"."+b.Name) })
	for _, t := range tables {
		rows, ixs, err := s.eng.Check(t)
		if err != nil {
			return src, err
		}
		if len(ixs) == 0 {
			src.rows = append(src.rows, []engine.Value{engine.StrValue(t.DB), engine.StrValue(t.Name), engine.IntValue(int64(rows)), null, null, null, null})
		}
		for _, ix := range ixs {
			src.rows = append(src.rows, []engine.Value{engine.StrValue(t.DB), engine.StrValue(t.Name), engine.IntValue(int64(rows)),
				engine.StrValue(ix.Index), engine.IntValue(int64(ix.Entries)), engine.IntValue(int64(ix.Missing)), engine.IntValue(int64(ix.Extra))})
		}
	}
	return src, nil
}

func strCols(names ...string) []column {
	cols := make([]column, len(names))
	for i, n := range names {
		cols[i] = column{name: n}
	}
	return cols
}

func (s *Server) dataLocks() source {
	st := s.eng.Manager().Status()
	src := source{cols: strCols("ENGINE", "ENGINE_LOCK_ID", "ENGINE_TRANSACTION_ID", "THREAD_ID", "OBJECT_SCHEMA", "OBJECT_NAME", "INDEX_NAME", "LOCK_TYPE", "LOCK_MODE", "LOCK_STATUS", "LOCK_DATA")}
	src.cols[2].int, src.cols[3].int = true, true
	add := func(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range, mode txnlock.Mode, status string) {
		schema, table, index, data := s.eng.DescribeRange(cf, r)
		src.rows = append(src.rows, []engine.Value{
			engine.StrValue("txnlock"), engine.StrValue(fmt.Sprintf("%d:%v:%v", txn, cf, r)), engine.IntValue(int64(txn)), engine.IntValue(s.threadOf(txn)),
			engine.StrValue(schema), engine.StrValue(table), engine.StrValue(index), engine.StrValue("RECORD"),
			engine.StrValue(mode.String()), engine.StrValue(status), engine.StrValue(data),
		})
	}
	for _, l := range st.Locks {
		for _, h := range l.Holders {
			add(h, l.CF, l.Range, l.Mode, "GRANTED")
		}
	}
	for _, w := range st.Waits {
		add(w.Txn, w.CF, w.Range, w.Mode, "WAITING")
	}
	return src
}

func (s *Server) dataLockWaits() source {
	st := s.eng.Manager().Status()
	src := source{cols: strCols("ENGINE", "REQUESTING_ENGINE_TRANSACTION_ID", "REQUESTING_THREAD_ID", "REQUESTING_LOCK_MODE", "REQUESTING_LOCK_DATA",
		"BLOCKING_ENGINE_TRANSACTION_ID", "BLOCKING_THREAD_ID", "OBJECT_SCHEMA", "OBJECT_NAME", "INDEX_NAME", "WAIT_SECONDS")}
	for _, i := range []int{1, 2, 5, 6, 10} {
		src.cols[i].int = true
	}
	now := time.Now()
	for _, w := range st.Waits {
		schema, table, index, data := s.eng.DescribeRange(w.CF, w.Range)
		for _, b := range w.Blockers {
			src.rows = append(src.rows, []engine.Value{
				engine.StrValue("txnlock"), engine.IntValue(int64(w.Txn)), engine.IntValue(s.threadOf(w.Txn)), engine.StrValue(w.Mode.String()), engine.StrValue(data),
				engine.IntValue(int64(b)), engine.IntValue(s.threadOf(b)), engine.StrValue(schema), engine.StrValue(table), engine.StrValue(index),
				engine.IntValue(int64(now.Sub(w.Since).Seconds())),
			})
		}
	}
	return src
}

func (s *Server) innodbTrx() source {
	src := source{cols: strCols("trx_id", "trx_state", "trx_started", "trx_mysql_thread_id", "trx_query")}
	src.cols[0].int, src.cols[3].int = true, true
	waiting := map[txnlock.TxnID]bool{}
	for _, w := range s.eng.Manager().Status().Waits {
		waiting[w.Txn] = true
	}
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	for _, ss := range list {
		ss.mu.Lock()
		id, start, info := ss.mu.txnID, ss.mu.txnStart, ss.mu.info
		ss.mu.Unlock()
		if id == 0 {
			continue
		}
		state := "RUNNING"
		if waiting[id] {
			state = "LOCK WAIT"
		}
		src.rows = append(src.rows, []engine.Value{engine.IntValue(int64(id)), engine.StrValue(state),
			engine.StrValue(start.UTC().Format("2006-01-02 15:04:05")), engine.IntValue(int64(ss.id)), engine.StrValue(info)})
	}
	slices.SortFunc(src.rows, func(a, b []engine.Value) int { return int(a[0].I - b[0].I) })
	return src
}

// innodbStatus is SHOW ENGINE INNODB STATUS's text: the latest deadlock
// from the detector's history, the transactions, the lock counters.
func (s *Server) innodbStatus() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=====================================\n%s TXNLOCKD MONITOR OUTPUT\n=====================================\n", time.Now().UTC().Format("2006-01-02 15:04:05"))
	hist := s.eng.Detector().History()
	if len(hist) > 0 {
		d := hist[len(hist)-1]
		b.WriteString("------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n")
		fmt.Fprintf(&b, "%s\n", d.Time.UTC().Format("2006-01-02 15:04:05"))
		if d.LimitExceeded {
			fmt.Fprintf(&b, "TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH (%s limit), TRANSACTION %d ROLLED BACK\n", d.Limit, d.Victim)
		}
		for i, c := range d.Cycle {
			schema, table, index, data := s.eng.DescribeRange(c.Lock.CF, c.Lock.Range)
			fmt.Fprintf(&b, "*** (%d) TRANSACTION %d, MySQL thread id %d\n*** (%d) WAITING FOR THIS LOCK TO BE GRANTED:\nRECORD LOCK table `%s`.`%s` index %s lock_mode %v data %s\n",
				i+1, c.Txn, s.threadOf(c.Txn), i+1, schema, table, index, c.Lock.Mode, data)
		}
		if !d.LimitExceeded {
			fmt.Fprintf(&b, "*** WE ROLL BACK TRANSACTION %d\n", d.Victim)
		}
	}
	b.WriteString("------------\nTRANSACTIONS\n------------\n")
	trx := s.innodbTrx()
	for _, r := range trx.rows {
		fmt.Fprintf(&b, "---TRANSACTION %d, %s, MySQL thread id %d, query: %s\n", r[0].I, r[1].S, r[3].I, r[4].S)
	}
	b.WriteString("--------------\nLOCK MANAGER\n--------------\n")
	for _, r := range s.statusRows() {
		fmt.Fprintf(&b, "%s %s\n", r[0], r[1])
	}
	b.WriteString("----------------------------\nEND OF TXNLOCKD MONITOR OUTPUT\n============================\n")
	return b.String()
}
