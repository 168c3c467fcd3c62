package txnlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Txn is one transaction's handle over the lock managers it uses:
//
//	h := txnlock.NewTxn(7)
//	defer h.Release() // commit or rollback: UnlockAll in every manager used
//	err := h.Lock(ctx, rows, txnlock.Request{Range: txnlock.Point([]byte("orders/17")), Mode: txnlock.Exclusive})
//	err = h.Lock(ctx, index, txnlock.Request{CF: 1, Range: scan, Mode: txnlock.Shared})
//	sp := h.Savepoint()
//	err = h.Lock(ctx, rows, txnlock.Request{Range: txnlock.Point([]byte("orders/18")), Mode: txnlock.Exclusive})
//	err = h.RollbackTo(sp) // unlocks orders/18 only
//
// A transaction that locks in several managers (a point manager for rows,
// a range manager for an index) must UnlockAll in each when it ends; a
// deadlock victim that forgets one leaks locks. The handle remembers every
// manager it sent a granted request to, in first-use order, and Release
// ends the transaction in all of them. It also keeps a record of what it
// holds, like a RocksDB transaction's lock tracker: a request that a held
// lock covers (a point in a point or range lock of a covering mode, a
// range inside one range lock of a covering mode, same manager and column
// family) is not sent again.
//
// # Savepoints
//
// Savepoint marks the record; RollbackTo(sp) releases the locks first
// taken after sp, as RocksDB's RollbackToSavePoint does. Exactly:
//   - a request that was covered when made after sp took nothing, and
//     nothing is released for it;
//   - a point first taken after sp is unlocked, unless a range lock held
//     at sp contains it;
//   - a range first taken after sp is unlocked except the keys that locks
//     held at sp cover: RollbackTo unlocks the difference, as one Unlock
//     call per maximal piece of it ([start, end] of each piece as the
//     Range bounds say; see NewRange). Pieces are not whole held
//     locks: this needs a manager that unlocks part of a held range, as
//     rangelock does (pointlock holds only points, which never need it).
//     A manager that refuses a piece (ErrNotHeld) keeps it held until
//     Release, and RollbackTo reports its error;
//   - a lock held at sp and upgraded (Shared to Exclusive) after it stays
//     upgraded: nothing is downgraded, and keys held at sp stay held in
//     the mode they have now;
//   - "first taken" counts from the last time the record got the lock: a
//     lock unlocked early and locked again after sp is released.
//
// RollbackTo invalidates every savepoint taken before it, sp included
// (take a new one after it); using one of them, or another handle's, is a
// *LockError wrapping ErrInvalidSavepoint, and on a released handle one
// wrapping ErrTxnReleased. Keys a manager added to the transaction's locks
// on its own (rangelock's escalation merges Exclusive runs into one wide
// lock) are not in the record: RollbackTo leaves them, Release frees them.
//
// # Concurrency
//
// Lock, Unlock, Savepoint and RollbackTo are the transaction's own calls:
// make them from one goroutine at a time (the record's covering and
// savepoint rules assume the transaction's requests come one after
// another; calls that overlap are safe, but a savepoint then falls
// anywhere among them). Release may be called at any time from any
// goroutine, concurrently with any of them, as may ID, Holds, Requests
// and Locks. Release cancels the waits of the handle's Lock calls (each
// waits under a context that Release cancels), waits for their managers
// to answer them, then calls UnlockAll: a waiting Lock fails with
// ErrTxnReleased and leaves nothing held, also if its manager granted it
// just before.
//
// # Mixing with direct Manager calls
//
// Calls made on a manager for the same TxnID bypass the record. Release
// still calls UnlockAll in every manager the handle used, which frees
// their locks there too; a lock taken directly in a manager the handle
// never used is not released by it. A direct Unlock leaves the record
// saying the lock is held, so a covered request is not re-sent: unlock
// through the handle. The handle only ever sends its own TxnID: no call
// of it touches another transaction's locks.
type Txn struct {
	id TxnID

	// Lock order: mu, then a manager's locks (Unlock and RollbackTo call
	// Manager.Unlock with mu held). Manager.Lock, which may wait, and
	// UnlockAll are never called with mu held.
	mu struct {
		sync.Mutex
		// released is set by the first Release, finished when it has
		// ended; done, made by a Release that has to wait for the first
		// one, is closed when it has.
		released, finished bool
		done               chan struct{}
		// inflight counts the Lock calls that passed their check of
		// released and have not yet recorded their outcome. drained,
		// made by a Release that finds some, is closed by the last of
		// them: only then does Release take the records.
		inflight int
		drained  chan struct{}
		// seq numbers the entries of the record in the order taken.
		seq uint64
		// rollbacks counts RollbackTo calls: a Savepoint is valid while
		// it is unchanged.
		rollbacks uint64
		// version changes with every change of the record: a Lock that
		// found a point's place before it waited may use it after only
		// if version is unchanged.
		version uint64
		// requests counts the Lock requests sent to managers.
		requests int
		// recs is the record of each manager used, in first-use order;
		// recs[0] is &first (no allocation for the first manager), and
		// recsBuf holds the first few pointers.
		recs    []*record
		recsBuf [2]*record
		first   record
		// waits are the contexts the handle's Lock calls wait under:
		// each is a caller's context, cancelled by Release.
		waits []*waitCtx
		// quiet is the wait of calls whose context is never done (its
		// ctx is quietCtx, its parent unused); quietDone is its Done
		// channel, made by the first wait that asks for it, closed by
		// Release.
		quiet     waitCtx
		quietDone chan struct{}
	}

	// quietCtx is quiet's context. Its parent (Context) is written under
	// mu while no call uses it, and read by the calls that do; h is set
	// by NewTxn.
	quietCtx quietCtx
	// releasing is mu.released, for quietCtx.Err without the mutex.
	releasing atomic.Bool
}

// quietCtx is the context a Lock call waits under when the caller's
// context is never done (its Done is nil, as context.Background's): the
// caller's values, done when Release begins. It lives in the handle, so
// such a call allocates nothing for it, and a Done channel only if it
// waits.
type quietCtx struct {
	context.Context // the caller's
	h               *Txn
}

func (c *quietCtx) Done() <-chan struct{} {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.quietDone == nil {
		h.mu.quietDone = make(chan struct{})
		if h.mu.released {
			close(h.mu.quietDone)
		}
	}
	return h.mu.quietDone
}

func (c *quietCtx) Err() error {
	if c.h.releasing.Load() {
		return context.Canceled
	}
	return nil
}

// waitCtx is the context a Lock call waits under: the caller's, with a
// cancel of Release's. Calls that pass the same context share one.
type waitCtx struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	users  int // Lock calls waiting under it now
}

// NewTxn returns the handle of transaction id, holding nothing. The id is
// not checked here: a zero id makes every request fail with ErrInvalidTxn
// in the manager.
func NewTxn(id TxnID) *Txn {
	h := &Txn{id: id}
	h.quietCtx.h = h
	h.mu.quiet.ctx = &h.quietCtx
	return h
}

// ID is the transaction's id.
func (h *Txn) ID() TxnID { return h.id }

// Requests is the number of lock requests the handle sent to managers,
// granted or not. Requests that a held lock covered are not sent and not
// counted.
func (h *Txn) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.requests
}

// Lock acquires req.Range in req.Mode in m, as m.Lock does, unless the
// record shows it held in a covering mode (then it sends nothing and
// returns nil). req.Txn must be 0 (the handle's id is filled in) or the
// handle's id, else a *LockError wrapping ErrInvalidTxn and nothing
// changes. Errors are m's, or a *LockError wrapping ErrTxnReleased if the
// handle was released before or during the call (nothing is then held by
// this call). m is compared with ==: pass the same pointer each time.
func (h *Txn) Lock(ctx context.Context, m Manager, req Request) error {
	switch {
	case req.Txn == 0:
		req.Txn = h.id
	case req.Txn != h.id:
		return &LockError{Op: "lock", Txn: req.Txn, CF: req.CF, Range: req.Range, Mode: req.Mode,
			Err: fmt.Errorf("%w: request of %v in the handle of %v", ErrInvalidTxn, req.Txn, h.id)}
	}
	if ctx == nil {
		return h.lockErr(req, ErrNilContext)
	}
	if m == nil {
		return h.lockErr(req, ErrNilManager)
	}
	// The record answers only requests a manager would accept.
	valid := req.Mode.Valid() && req.Range.Valid() && (req.Timeout >= 0 || req.Timeout == NoWait)
	key, point := req.Range.PointKey()
	h.mu.Lock()
	if h.mu.released {
		h.mu.Unlock()
		return h.lockErr(req, ErrTxnReleased)
	}
	// rec stays m's record until the call ends: records go only in the
	// Release that waits for this call.
	rec := h.recordLocked(m)
	at := -1
	if rec != nil && valid {
		var covered bool
		if point {
			covered, at = rec.coversPoint(req.CF, key, req.Mode)
		} else {
			covered = rec.coversRange(req.CF, req.Range, req.Mode)
		}
		if covered {
			h.mu.Unlock()
			return nil
		}
	}
	version := h.mu.version
	h.mu.requests++
	h.mu.inflight++
	w := h.waitCtxLocked(ctx)
	h.mu.Unlock()

	err := m.Lock(w.ctx, req)

	h.mu.Lock()
	w.users--
	h.mu.inflight--
	if h.mu.released {
		if err == nil {
			// Granted as Release began: make sure its UnlockAll
			// reaches m.
			h.addRecordLocked(m)
		}
		if h.mu.inflight == 0 {
			close(h.mu.drained) // made by Release, which saw this call
		}
		h.mu.Unlock()
		return h.lockErr(req, ErrTxnReleased)
	}
	if err == nil {
		if rec == nil {
			rec = h.addRecordLocked(m)
		}
		h.mu.seq++
		if point {
			if version != h.mu.version {
				at = rec.find(req.CF, key)
			}
			rec.addPoint(at, req.CF, key, req.Mode, h.mu.seq)
		} else {
			rec.ranges = append(rec.ranges, heldRange{cf: req.CF, r: req.Range.Clone(), mode: req.Mode, seq: h.mu.seq})
		}
		h.mu.version++
	}
	h.mu.Unlock()
	return err
}

func (h *Txn) lockErr(req Request, err error) error {
	return &LockError{Op: "lock", Txn: h.id, CF: req.CF, Range: req.Range, Mode: req.Mode, Err: err}
}

// Holds reports whether the record shows r in cf of m held in a mode
// covering mode, that is whether Lock would send nothing for it. False on
// a released handle.
func (h *Txn) Holds(m Manager, cf ColumnFamily, r Range, mode Mode) bool {
	if !mode.Valid() || !r.Valid() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.recordLocked(m)
	if h.mu.released || rec == nil {
		return false
	}
	if k, ok := r.PointKey(); ok {
		covered, _ := rec.coversPoint(cf, k, mode)
		return covered
	}
	return rec.coversRange(cf, r, mode)
}

// Locks calls fn for each lock in the record, in no particular order,
// until fn returns false: the manager, and the lock's column family,
// range and mode (the weakest mode it may be held in). fn runs without
// the handle's mutex and may keep l; locks taken or released during the
// walk may or may not be seen.
func (h *Txn) Locks(fn func(m Manager, l LockRef) bool) {
	for ri, i := 0, 0; ; {
		m, l, at := h.lockAt(ri, i)
		switch at {
		case pastLast:
			return
		case pastRecord:
			ri, i = ri+1, 0
		default:
			if !fn(m, l) {
				return
			}
			i++
		}
	}
}

// Where lockAt found itself.
const (
	atLock = iota
	pastRecord
	pastLast
)

// lockAt returns the i-th lock of the ri-th record: its points, then its
// ranges.
func (h *Txn) lockAt(ri, i int) (m Manager, l LockRef, at int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ri >= len(h.mu.recs) {
		return nil, LockRef{}, pastLast
	}
	rec := h.mu.recs[ri]
	if i < len(rec.points) {
		p := rec.points[i]
		return rec.m, LockRef{CF: p.cf, Range: Point(p.key(rec.keys)).Clone(), Mode: p.mode}, atLock
	}
	if i -= len(rec.points); i < len(rec.ranges) {
		r := rec.ranges[i]
		return rec.m, LockRef{CF: r.cf, Range: r.r.Clone(), Mode: r.mode}, atLock
	}
	return nil, LockRef{}, pastRecord
}

// Unlock releases the lock the transaction holds on r in cf of m before
// it ends, forwarding to m.Unlock (same semantics and errors), and forgets
// the keys of r in the record: points in r, and the parts of range locks
// that r overlaps (as rangelock unlocks them). ErrTxnReleased after
// Release.
func (h *Txn) Unlock(m Manager, cf ColumnFamily, r Range) error {
	if m == nil {
		return &LockError{Op: "unlock", Txn: h.id, CF: cf, Range: r, Err: ErrNilManager}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.released {
		return &LockError{Op: "unlock", Txn: h.id, CF: cf, Range: r, Err: ErrTxnReleased}
	}
	if err := m.Unlock(h.id, cf, r); err != nil {
		return err
	}
	if rec := h.recordLocked(m); rec != nil && r.Valid() {
		rec.forget(cf, r)
		h.mu.version++
	}
	return nil
}

// Savepoint is a mark in a handle's record, for RollbackTo. The zero
// Savepoint is invalid.
type Savepoint struct {
	h         *Txn
	seq       uint64
	rollbacks uint64
}

// Savepoint marks the record now: RollbackTo(sp) releases what is taken
// after it.
func (h *Txn) Savepoint() Savepoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Savepoint{h: h, seq: h.mu.seq, rollbacks: h.mu.rollbacks}
}

// RollbackTo releases the locks first taken after sp (see Savepoints in
// the type's doc for exactly which keys) and invalidates sp and every
// older savepoint. Errors: a *LockError with Op "rollback to savepoint"
// wrapping ErrInvalidSavepoint, ErrTxnReleased, or the managers' Unlock
// errors (the record forgets those locks anyway; Release frees them).
func (h *Txn) RollbackTo(sp Savepoint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.mu.released:
		return &LockError{Op: "rollback to savepoint", Txn: h.id, Err: ErrTxnReleased}
	case sp.h != h || sp.rollbacks != h.mu.rollbacks:
		return &LockError{Op: "rollback to savepoint", Txn: h.id, Err: ErrInvalidSavepoint}
	}
	h.mu.rollbacks++
	h.mu.version++
	var errs []error
	for _, rec := range h.mu.recs {
		errs = rec.rollbackTo(h.id, sp.seq, errs)
	}
	if len(errs) > 0 {
		return &LockError{Op: "rollback to savepoint", Txn: h.id, Err: errors.Join(errs...)}
	}
	return nil
}

// Release ends the transaction in every manager the handle used: it fails
// the waits of the handle's Lock calls with ErrTxnReleased, waits for
// their managers to answer them, then calls UnlockAll in each manager in
// first-use order. Once it returns nothing the handle took is held.
// Later calls of the handle fail with ErrTxnReleased; a second Release
// waits for the first to finish and returns nil. A manager's ErrClosed is
// not an error here (a closed manager holds nothing); other UnlockAll
// errors are returned joined in a *LockError with Op "release", after
// every manager was tried.
func (h *Txn) Release() error {
	h.mu.Lock()
	if h.mu.released {
		if h.mu.finished {
			h.mu.Unlock()
			return nil
		}
		if h.mu.done == nil {
			h.mu.done = make(chan struct{})
		}
		done := h.mu.done
		h.mu.Unlock()
		<-done
		return nil
	}
	h.mu.released = true
	defer func() {
		h.mu.Lock()
		h.mu.first = record{} // drops the keys and the index
		h.mu.recsBuf = [2]*record{}
		h.mu.finished = true
		if h.mu.done != nil {
			close(h.mu.done)
		}
		h.mu.Unlock()
	}()
	h.releasing.Store(true)
	for _, w := range h.mu.waits {
		w.cancel(ErrTxnReleased)
	}
	h.mu.waits = nil
	if h.mu.quietDone != nil {
		close(h.mu.quietDone)
	}
	if h.mu.inflight > 0 {
		drained := make(chan struct{})
		h.mu.drained = drained
		h.mu.Unlock()
		<-drained
		h.mu.Lock()
	}
	recs := h.mu.recs
	h.mu.recs = nil
	h.mu.Unlock()
	var errs []error
	for _, rec := range recs {
		if err := rec.m.UnlockAll(h.id); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return &LockError{Op: "release", Txn: h.id, Err: errors.Join(errs...)}
	}
	return nil
}

// recordLocked returns m's record, or nil if the handle never used m.
func (h *Txn) recordLocked(m Manager) *record {
	for _, rec := range h.mu.recs {
		if rec.m == m {
			return rec
		}
	}
	return nil
}

// addRecordLocked returns m's record, making it on m's first use.
func (h *Txn) addRecordLocked(m Manager) *record {
	if rec := h.recordLocked(m); rec != nil {
		return rec
	}
	rec := &h.mu.first
	if len(h.mu.recs) > 0 {
		rec = new(record)
	}
	rec.m = m
	if h.mu.recs == nil {
		h.mu.recs = h.mu.recsBuf[:0]
	}
	h.mu.recs = append(h.mu.recs, rec)
	return rec
}

// waitCtxLocked returns the context a Lock call with parent waits under,
// counting the call as a user. Contexts of other parents that no call
// uses are cancelled and dropped: a handle keeps as many as it has
// overlapping calls with different contexts, usually one.
func (h *Txn) waitCtxLocked(parent context.Context) *waitCtx {
	// The quiet parent is written only when it changes: a transaction's
	// calls usually pass one context, which was never done the last time
	// (a context that is never done stays so).
	if q := &h.mu.quiet; sameContext(h.quietCtx.Context, parent) {
		q.users++
		return q
	} else if q.users == 0 && parent.Done() == nil {
		h.quietCtx.Context = parent
		q.users++
		return q
	}
	for _, w := range h.mu.waits {
		if sameContext(w.parent, parent) {
			w.users++
			return w
		}
	}
	kept := h.mu.waits[:0]
	for _, w := range h.mu.waits {
		if w.users > 0 {
			kept = append(kept, w)
		} else {
			w.cancel(nil)
		}
	}
	clear(h.mu.waits[len(kept):])
	ctx, cancel := context.WithCancelCause(parent)
	w := &waitCtx{parent: parent, ctx: ctx, cancel: cancel, users: 1}
	h.mu.waits = append(kept, w)
	return w
}

// sameContext reports whether a and b are the same context, without the
// panic of == on two values of one incomparable type. Interface values
// whose two words (type, data) are equal are the same value of any type:
// that is the usual case, a call passing the context of the last one, and
// it is answered without reflection.
func sameContext(a, b context.Context) bool {
	if *(*[2]unsafe.Pointer)(unsafe.Pointer(&a)) == *(*[2]unsafe.Pointer)(unsafe.Pointer(&b)) {
		return true
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}
