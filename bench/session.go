package bench

import (
	"context"
	"math/rand/v2"
	"time"
)

// session is one client connection of the driver: it runs statements on
// its current transaction, applies the throttling delays, times each
// statement for the digest statistics and counts the queries that
// completed. One goroutine owns it.
type session struct {
	ctx       context.Context
	db        DB
	tx        Tx
	rng       *rand.Rand
	tableSize int64
	tables    int
	delays    delayTable  // nil: no statement is delayed
	digests   digestStats // nil: statements are not timed
	buf       []byte      // scratch for random values

	// Queries that completed, by sysbench's class.
	reads, writes, other uint64
}

func newSession(ctx context.Context, db DB, seed uint64, tables, tableSize int, delays delayTable, digests bool) *session {
	s := &session{
		ctx:       ctx,
		db:        db,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		tableSize: int64(tableSize),
		tables:    tables,
		delays:    delays,
		buf:       make([]byte, 0, 128),
	}
	if digests {
		s.digests = newDigestStats(tables)
	}
	return s
}

// queries is the number of statements that completed.
func (s *session) queries() uint64 { return s.reads + s.writes + s.other }

// pre starts a statement: it reads the clock when statements are timed
// and sleeps the statement's delay (which thus counts in its time, as a
// query delayed by a proxy is slower for its client).
func (s *session) pre(k stmtKind, table int) time.Time {
	var t0 time.Time
	if s.digests != nil {
		t0 = time.Now()
	}
	if d := s.delays.delay(k, table); d > 0 {
		sleepCtx(s.ctx, d)
	}
	return t0
}

// post ends a statement: it records its time and rows, counts it if it
// succeeded, and passes err on.
func (s *session) post(k stmtKind, table int, t0 time.Time, rows int, err error) error {
	if s.digests != nil {
		s.digests[table][k].add(time.Since(t0), rows)
	}
	if err == nil {
		switch k.class() {
		case classRead:
			s.reads++
		case classWrite:
			s.writes++
		default:
			s.other++
		}
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// table picks a table uniformly, as sysbench's get_table_num.
func (s *session) table() int {
	if s.tables <= 1 {
		return 1
	}
	return 1 + s.rng.IntN(s.tables)
}

// id picks an id uniformly in [1, table-size], as sysbench's --rand-type=uniform.
func (s *session) id() int64 { return 1 + s.rng.Int64N(s.tableSize) }

// randDigits returns sysbench's value shape: groups of 11 random digits
// joined by '-' (c: 10 groups, 119 characters; pad: 5 groups, 59).
func (s *session) randDigits(groups int) string {
	b := s.buf[:0]
	for g := range groups {
		if g > 0 {
			b = append(b, '-')
		}
		r := s.rng.Uint64()
		for range 11 {
			b = append(b, byte('0'+r%10))
			r /= 10
		}
	}
	s.buf = b
	return string(b)
}

func (s *session) randC() string   { return s.randDigits(10) }
func (s *session) randPad() string { return s.randDigits(5) }

// begin starts a transaction; counted as a query (BEGIN) if explicit.
func (s *session) begin(explicit bool) {
	if !explicit {
		s.tx = s.db.Begin()
		return
	}
	t0 := s.pre(stmtBegin, 0)
	s.tx = s.db.Begin()
	s.post(stmtBegin, 0, t0, 0, nil)
}

// commit ends the transaction; counted as a query (COMMIT) if explicit.
func (s *session) commit(explicit bool) error {
	if !explicit {
		return s.tx.Commit()
	}
	t0 := s.pre(stmtCommit, 0)
	err := s.tx.Commit()
	return s.post(stmtCommit, 0, t0, 0, err)
}

// rollback ends a failed transaction. Its error is ignored: the
// transaction's first error is the one that matters.
func (s *session) rollback() { _ = s.tx.Rollback() }

func (s *session) pointSelect(t int, id int64) error {
	t0 := s.pre(stmtPointSelect, t)
	n, err := s.tx.PointSelect(s.ctx, t, id)
	return s.post(stmtPointSelect, t, t0, n, err)
}

func (s *session) rangeSelect(k stmtKind, t int, lo, hi int64, forUpdate bool) error {
	t0 := s.pre(k, t)
	n, err := s.tx.RangeSelect(s.ctx, t, lo, hi, forUpdate)
	return s.post(k, t, t0, n, err)
}

func (s *session) updateIndex(t int, id int64) error {
	t0 := s.pre(stmtUpdateIndex, t)
	n, err := s.tx.UpdateIndex(s.ctx, t, id)
	return s.post(stmtUpdateIndex, t, t0, n, err)
}

func (s *session) updateNonIndex(t int, id int64) error {
	c := s.randC()
	t0 := s.pre(stmtUpdateNonIndex, t)
	n, err := s.tx.UpdateNonIndex(s.ctx, t, id, c)
	return s.post(stmtUpdateNonIndex, t, t0, n, err)
}

func (s *session) delete(t int, id int64) error {
	t0 := s.pre(stmtDelete, t)
	n, err := s.tx.Delete(s.ctx, t, id)
	return s.post(stmtDelete, t, t0, n, err)
}

func (s *session) insert(t int, id, k int64) error {
	c, pad := s.randC(), s.randPad()
	t0 := s.pre(stmtInsert, t)
	err := s.tx.Insert(s.ctx, t, id, k, c, pad)
	return s.post(stmtInsert, t, t0, 1, err)
}

func (s *session) insertAuto(t int, k int64) (int64, error) {
	c, pad := s.randC(), s.randPad()
	t0 := s.pre(stmtInsertAuto, t)
	id, err := s.tx.InsertAuto(s.ctx, t, k, c, pad)
	return id, s.post(stmtInsertAuto, t, t0, 1, err)
}
