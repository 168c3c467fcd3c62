package bench

import "fmt"

// Workload names one of sysbench's OLTP statement mixes.
type Workload string

// The workloads, with sysbench's statement mixes (default options).
const (
	// OLTPWriteOnly: BEGIN; UPDATE k=k+1 (id1); UPDATE c (id2); DELETE
	// (id3); INSERT (id3); COMMIT: 6 queries per transaction.
	OLTPWriteOnly Workload = "oltp_write_only"
	// OLTPUpdateNonIndex: one UPDATE c in autocommit: 1 query.
	OLTPUpdateNonIndex Workload = "oltp_update_non_index"
	// OLTPReadWrite: BEGIN; 10 point selects; 4 range selects of 100 rows
	// (simple, SUM, ORDER BY, DISTINCT); the four writes of
	// oltp_write_only; COMMIT: 20 queries.
	OLTPReadWrite Workload = "oltp_read_write"
	// OLTPPointSelect: one point select in autocommit: 1 query.
	OLTPPointSelect Workload = "oltp_point_select"
)

// workloads lists every workload.
var workloads = []Workload{OLTPWriteOnly, OLTPUpdateNonIndex, OLTPReadWrite, OLTPPointSelect}

// Valid reports whether w is a known workload.
func (w Workload) Valid() bool {
	for _, k := range workloads {
		if w == k {
			return true
		}
	}
	return false
}

// rangeSize is sysbench's --range-size.
const rangeSize = 100

// pointSelects is sysbench's --point-selects.
const pointSelects = 10

// event runs one transaction of the workload on s: begin, statements,
// commit. On error the transaction is rolled back and the error returned.
func (w Workload) event(s *session) error {
	explicit := w == OLTPWriteOnly || w == OLTPReadWrite
	s.begin(explicit)
	var err error
	switch w {
	case OLTPWriteOnly:
		err = s.writes4()
	case OLTPReadWrite:
		err = s.reads14()
		if err == nil {
			err = s.writes4()
		}
	case OLTPUpdateNonIndex:
		err = s.updateNonIndex(s.table(), s.id())
	case OLTPPointSelect:
		err = s.pointSelect(s.table(), s.id())
	default:
		err = fmt.Errorf("bench: unknown workload %q", w)
	}
	if err == nil {
		err = s.commit(explicit)
	}
	if err != nil {
		s.rollback()
	}
	return err
}

// writes4 is oltp_write_only's body: sysbench's index update, non-index
// update and delete+insert of one id (the INSERT re-creates the row the
// DELETE removed).
func (s *session) writes4() error {
	if err := s.updateIndex(s.table(), s.id()); err != nil {
		return err
	}
	if err := s.updateNonIndex(s.table(), s.id()); err != nil {
		return err
	}
	t, id := s.table(), s.id()
	if err := s.delete(t, id); err != nil {
		return err
	}
	return s.insert(t, id, s.id())
}

// reads14 is oltp_read_write's read part: point selects, then the four
// range selects (plain SELECTs: they take no locks).
func (s *session) reads14() error {
	for range pointSelects {
		if err := s.pointSelect(s.table(), s.id()); err != nil {
			return err
		}
	}
	for _, k := range []stmtKind{stmtSimpleRange, stmtSumRange, stmtOrderRange, stmtDistinctRange} {
		t, lo := s.table(), s.id()
		if err := s.rangeSelect(k, t, lo, lo+rangeSize-1, false); err != nil {
			return err
		}
	}
	return nil
}
