package shell

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/detect"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// Family is what a Shell asks of a manager's column family (F, through
// its pointer type). Each method takes the family's latches itself; the
// Shell calls them with Families.Mu held.
type Family[F any] interface {
	*F
	// AddStats adds the family's counters and what it holds now to s.
	AddStats(s *txnlock.Stats)
	// Retire fails with ErrColumnFamilyInUse if any lock is held or
	// requested in the family; otherwise it marks the family dropped (a
	// request that found it before fails with ErrUnknownColumnFamily)
	// and adds its counters to retired.
	Retire(retired *txnlock.Stats) error
	// Close fails every waiter of the family with ErrClosed and drops
	// every lock.
	Close()
}

// Shell is the part of a lock manager that is the same in both: its
// column families (F), its transactions' records, its attachment to the
// deadlock detector, and the calls that add, drop and close. A manager
// embeds it, Inits it, and keeps its latches and lock tables in F.
type Shell[F any, PF Family[F]] struct {
	Fams Families[F]
	Txns Records
	// Det is the manager's attachment to its detector; nil: no deadlock
	// detection. FiniteWaits: the detector needs every wait to end by a
	// timeout (requests with WaitForever are refused).
	Det         detect.Graph
	FiniteWaits bool

	closed atomic.Bool
	newF   func(cf txnlock.ColumnFamily, idx uint16) *F
}

// Init sets the shell up: records in stripes, the default column family
// made by newF, and the attachment to det (nil: none), which asks c how
// many locks a transaction holds.
func (s *Shell[F, PF]) Init(stripes int, newF func(cf txnlock.ColumnFamily, idx uint16) *F, det txnlock.Detector, c detect.LockCounter) {
	s.Txns = NewRecords(stripes)
	s.newF = newF
	s.Fams.Init(func(idx uint16) *F { return newF(txnlock.DefaultColumnFamily, idx) })
	if det != nil {
		d := det.Seam()
		s.Det = d.Attach(c)
		s.FiniteWaits = d.FiniteWaits()
	}
}

// Closed reports whether Close has been called.
func (s *Shell[F, PF]) Closed() bool { return s.closed.Load() }

// AddColumnFamily registers cf (see txnlock.Manager).
func (s *Shell[F, PF]) AddColumnFamily(cf txnlock.ColumnFamily) error {
	s.Fams.Mu.Lock()
	defer s.Fams.Mu.Unlock()
	if s.closed.Load() {
		return cfErr("add column family", cf, txnlock.ErrClosed)
	}
	if err := s.Fams.AddLocked(cf, func(idx uint16) *F { return s.newF(cf, idx) }); err != nil {
		return cfErr("add column family", cf, err)
	}
	return nil
}

// DropColumnFamily forgets cf (see txnlock.Manager): ErrColumnFamilyInUse
// while any lock is held or requested in it, and for the default column
// family.
func (s *Shell[F, PF]) DropColumnFamily(cf txnlock.ColumnFamily) error {
	s.Fams.Mu.Lock()
	defer s.Fams.Mu.Unlock()
	if s.closed.Load() {
		return cfErr("drop column family", cf, txnlock.ErrClosed)
	}
	f, err := s.Fams.Family(cf)
	switch {
	case err != nil:
		return cfErr("drop column family", cf, err)
	case cf == txnlock.DefaultColumnFamily:
		return cfErr("drop column family", cf, txnlock.ErrColumnFamilyInUse)
	}
	if err := PF(f).Retire(&s.Fams.Retired); err != nil {
		return cfErr("drop column family", cf, err)
	}
	s.Fams.RemoveLocked(cf)
	return nil
}

// Close fails every waiter with ErrClosed, drops every lock, detaches
// from the detector and makes every later call fail with ErrClosed.
// Closing twice returns ErrClosed.
func (s *Shell[F, PF]) Close() error {
	s.Fams.Mu.Lock()
	defer s.Fams.Mu.Unlock()
	if s.closed.Swap(true) {
		return &txnlock.LockError{Op: "close", Err: txnlock.ErrClosed}
	}
	for _, f := range s.Fams.All {
		PF(f).Close()
	}
	s.Txns.Clear()
	if s.Det != nil {
		s.Det.Detach()
	}
	return nil
}

// Stats sums the counters of every column family, those dropped included
// (see txnlock.Manager).
func (s *Shell[F, PF]) Stats() txnlock.Stats {
	s.Fams.Mu.Lock() // no column family is dropped meanwhile
	defer s.Fams.Mu.Unlock()
	st := s.Fams.Retired
	for _, f := range s.Fams.All {
		PF(f).AddStats(&st)
	}
	return st
}

// CheckLock validates a Lock call before any state is touched, rangeErr
// being the manager's verdict on req.Range (nil: valid), and returns its
// column family and the wait to apply (def for DefaultTimeout).
func (s *Shell[F, PF]) CheckLock(ctx context.Context, req *txnlock.Request, rangeErr error, def time.Duration) (*F, time.Duration, error) {
	switch {
	case ctx == nil:
		return nil, 0, txnlock.ErrNilContext
	case s.closed.Load():
		return nil, 0, txnlock.ErrClosed
	case !req.Txn.Valid():
		return nil, 0, txnlock.ErrInvalidTxn
	case !req.Mode.Valid():
		return nil, 0, txnlock.ErrInvalidMode
	case rangeErr != nil:
		return nil, 0, rangeErr
	}
	timeout := req.Timeout
	if timeout <= 0 || timeout == txnlock.WaitForever {
		var err error
		if timeout, err = optcheck.ResolveTimeout(timeout, def, s.FiniteWaits); err != nil {
			return nil, 0, err
		}
	}
	f := s.Fams.Get(req.CF)
	if f == nil {
		return nil, 0, txnlock.ErrUnknownColumnFamily
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return f, timeout, nil
}

// LockErr wraps err, the end of a request for req (op "lock", "unlock",
// …), with the blockers a timeout or a NoWait refusal reports.
func LockErr(op string, req txnlock.Request, blockers []txnlock.TxnID, err error) error {
	r := req.Range
	if r.Valid() {
		r = r.Clone() // the caller may reuse its key buffers
	}
	return &txnlock.LockError{Op: op, Txn: req.Txn, CF: req.CF, Range: r, Mode: req.Mode, Blockers: blockers, Err: err}
}

func cfErr(op string, cf txnlock.ColumnFamily, err error) error {
	return &txnlock.LockError{Op: op, CF: cf, Err: err}
}

// UnlockErr wraps err, the end of an Unlock of r.
func UnlockErr(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range, err error) error {
	return LockErr("unlock", txnlock.Request{Txn: txn, CF: cf, Range: r}, nil, err)
}

// CheckUnlockAll validates an UnlockAll call: nil, or its error.
func (s *Shell[F, PF]) CheckUnlockAll(txn txnlock.TxnID) error {
	var err error
	switch {
	case s.closed.Load():
		err = txnlock.ErrClosed
	case !txn.Valid():
		err = txnlock.ErrInvalidTxn
	default:
		return nil
	}
	return &txnlock.LockError{Op: "unlock all", Txn: txn, Err: err}
}

// CheckUnlock validates an Unlock call before any state is touched,
// rangeErr being the manager's verdict on its range (nil: valid), and
// returns its column family.
func (s *Shell[F, PF]) CheckUnlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, rangeErr error) (*F, error) {
	switch {
	case s.closed.Load():
		return nil, txnlock.ErrClosed
	case !txn.Valid():
		return nil, txnlock.ErrInvalidTxn
	case rangeErr != nil:
		return nil, rangeErr
	}
	return s.Fams.Family(cf)
}
