package locktable

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/contract"
	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/optcheck"
)

// TestContract plays the rule traces, which both managers play too,
// against the core alone, on one goroutine: coreBackend is a manager with
// nothing but a Table per column family, a Holds per transaction and the
// core's decisions.
func TestContract(t *testing.T) {
	contract.RunBackend(t, "../contract/testdata/rules", func(cfg contract.Config) (contract.Backend, error) {
		if cfg.Detector != nil || cfg.MaxLocks != 0 || cfg.MaxLockMemory != 0 || cfg.EscalationBarriers != nil || cfg.CollideHashes {
			return nil, errors.New("the core backend has no detector, limits or hash options")
		}
		return &coreBackend{cfg: cfg, tabs: map[txnlock.ColumnFamily]*Table{}, holds: map[txnlock.TxnID]*Holds{}}, nil
	})
}

// coreBackend runs lock requests synchronously: a request that must wait
// is a queued lockwait.Waiter that no goroutine waits on; Settle fails
// those whose deadline passed or whose context was cancelled, and reports
// the ones the core granted.
type coreBackend struct {
	cfg     contract.Config
	tabs    map[txnlock.ColumnFamily]*Table
	holds   map[txnlock.TxnID]*Holds
	waiting []*coreWait
	ended   []contract.Outcome
	c       lockwait.Counters
}

type coreWait struct {
	id       int
	req      txnlock.Request
	w        *lockwait.Waiter
	l        *Lock
	cf       txnlock.ColumnFamily
	key      []byte
	due      time.Time
	timed    bool
	canceled bool
}

var errUnsupported = errors.New("not part of the lock table core")

func (b *coreBackend) table(cf txnlock.ColumnFamily) *Table {
	if b.tabs[cf] == nil {
		b.tabs[cf] = &Table{}
	}
	return b.tabs[cf]
}

func (b *coreBackend) holdsOf(txn txnlock.TxnID) *Holds {
	if b.holds[txn] == nil {
		b.holds[txn] = &Holds{Txn: txn}
	}
	return b.holds[txn]
}

// hash puts every key in one hash chain: the table tells keys apart.
func hash([]byte) uint64 { return 0 }

func lockErr(req txnlock.Request, blockers []txnlock.TxnID, err error) error {
	return &txnlock.LockError{Op: "lock", Txn: req.Txn, CF: req.CF, Range: req.Range.Clone(), Mode: req.Mode, Blockers: blockers, Err: err}
}

func (b *coreBackend) Lock(id int, req txnlock.Request, ctx contract.Ctx) (bool, error) {
	key, ok := req.Range.PointKey()
	if !ok || !req.Txn.Valid() || !req.Mode.Valid() || ctx == contract.CtxNil {
		return true, errUnsupported // bad input is the managers' to check
	}
	timeout, err := optcheck.ResolveTimeout(req.Timeout, b.lockTimeout(), false)
	if err != nil {
		return true, errUnsupported
	}
	if ctx == contract.CtxCancelled {
		return true, lockErr(req, nil, context.Canceled)
	}
	tab := b.table(req.CF)
	l, pos := tab.Find(hash(key), key)
	if l == nil {
		l = tab.New(pos, hash(key), key)
	}
	d, upgrade := l.Decide(req.Txn, req.Mode, false)
	switch {
	case d == Covered:
		b.c.Acquired++
		return true, nil
	case d == Grant || d == GrantPast:
		l.Grant(b.holdsOf(req.Txn), req.Mode, 0)
		b.c.Acquired++
		return true, nil
	case timeout == txnlock.NoWait:
		b.c.Timeouts++
		blockers := l.WaitsForNew(nil, req.Txn, req.Mode, upgrade)
		b.drop(req.CF, l)
		return true, lockErr(req, blockers, txnlock.ErrLockNoWait)
	}
	now := b.cfg.Clock.Now()
	w := lockwait.New(req.Txn, txnlock.LockRef{CF: req.CF, Range: txnlock.Point(key), Mode: req.Mode}, now)
	w.Upgrade = upgrade
	l.Enqueue(w)
	b.c.BeginWait()
	cw := &coreWait{id: id, req: req, w: w, l: l, cf: req.CF, key: key}
	if timeout != txnlock.WaitForever {
		cw.due, cw.timed = now.Add(timeout), true
	}
	b.waiting = append(b.waiting, cw)
	return false, nil
}

func (b *coreBackend) lockTimeout() time.Duration {
	if b.cfg.LockTimeout == 0 {
		return txnlock.DefaultLockTimeout
	}
	return b.cfg.LockTimeout
}

func (b *coreBackend) Cancel(id int) {
	for _, cw := range b.waiting {
		if cw.id == id {
			cw.canceled = true
		}
	}
}

func (b *coreBackend) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	key, ok := r.PointKey()
	if !ok {
		return errUnsupported
	}
	l, _ := b.table(cf).Find(hash(key), key)
	if l == nil || !l.Release(txn) {
		return &txnlock.LockError{Op: "unlock", Txn: txn, CF: cf, Range: r, Err: txnlock.ErrNotHeld}
	}
	b.c.Released++
	b.grant(cf, l)
	return nil
}

func (b *coreBackend) UnlockAll(txn txnlock.TxnID) error {
	h := b.holdsOf(txn)
	h.ReleaseAll(func(l *Lock) {
		b.c.Released++
		for cf, tab := range b.tabs {
			if tab.Has(hash([]byte(l.Key())), l) {
				b.grant(cf, l)
				return
			}
		}
	})
	delete(b.holds, txn)
	return nil
}

// grant grants what l's queue now allows, and drops l once empty.
func (b *coreBackend) grant(cf txnlock.ColumnFamily, l *Lock) {
	for w := range l.Grants(nil, false) {
		if !w.Claim() {
			continue
		}
		l.GrantWaiter(w, b.holdsOf(w.Txn()), 0)
		b.c.Acquired++
		b.c.EndWait(nil, w.Since, b.cfg.Clock.Now())
		for i, cw := range b.waiting {
			if cw.w == w {
				b.ended = append(b.ended, contract.Outcome{ID: cw.id})
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				break
			}
		}
	}
	b.drop(cf, l)
}

func (b *coreBackend) drop(cf txnlock.ColumnFamily, l *Lock) {
	if l.Empty() {
		b.table(cf).Delete(hash([]byte(l.Key())), l)
	}
}

func (b *coreBackend) Status() txnlock.Status {
	var s txnlock.Status
	var snap Snapshot
	for cf, tab := range b.tabs {
		tab.All(func(_ uint64, l *Lock) bool { snap.Add(l); return true })
		snap.AppendTo(&s, cf)
	}
	s.Sort()
	return s
}

func (b *coreBackend) Stats() txnlock.Stats {
	var s txnlock.Stats
	b.c.AddTo(&s)
	for _, tab := range b.tabs {
		tab.All(func(_ uint64, l *Lock) bool {
			if l.Held() {
				s.CurrentLocks++
			}
			return true
		})
	}
	return s
}

// Settle fails the waits whose deadline passed or whose context was
// cancelled, one at a time in the order they were made, each leaving its
// queue as a failed manager wait does, and returns what ended.
func (b *coreBackend) Settle() []contract.Outcome {
	now := b.cfg.Clock.Now()
	for i := 0; i < len(b.waiting); {
		cw := b.waiting[i]
		var err error
		switch {
		case cw.canceled:
			err = context.Canceled
		case cw.timed && !now.Before(cw.due):
			err = txnlock.ErrLockTimeout
		default:
			i++
			continue
		}
		var blockers []txnlock.TxnID
		if err == txnlock.ErrLockTimeout {
			blockers = cw.l.WaitsFor(nil, cw.w)
		}
		cw.w.Fail(err)
		cw.l.Leave(cw.w)
		b.c.EndWait(err, cw.w.Since, now)
		b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
		b.ended = append(b.ended, contract.Outcome{ID: cw.id, Err: lockErr(cw.req, blockers, err)})
		b.grant(cw.cf, cw.l)
		i = 0
	}
	ended := b.ended
	b.ended = nil
	return ended
}

// CheckInvariants checks every Lock (Verify) and every hold's slot.
func (b *coreBackend) CheckInvariants() error {
	var err error
	for _, tab := range b.tabs {
		tab.All(func(_ uint64, l *Lock) bool {
			if err = l.Verify(); err == nil {
				l.Holders(func(hd *Holder) bool {
					if !hd.InHolds() || b.holds[hd.Txn()] != hd.List() {
						err = fmt.Errorf("key %q: hold of %v not at its slot", l.Key(), hd.Txn())
					}
					return err == nil
				})
			}
			return err == nil
		})
	}
	return err
}

func (b *coreBackend) AddColumnFamily(txnlock.ColumnFamily) error  { return errUnsupported }
func (b *coreBackend) DropColumnFamily(txnlock.ColumnFamily) error { return errUnsupported }
func (b *coreBackend) Close() error                                { return errUnsupported }
func (b *coreBackend) Stop()                                       {}
