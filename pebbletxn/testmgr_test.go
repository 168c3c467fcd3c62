package pebbletxn

import (
	"context"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
)

// simpleManager is a tiny, slow, obviously-correct range lock manager for
// tests that must not depend on the real managers: one mutex, a list of
// held locks, waiters woken by a broadcast channel. No deadlock detection,
// no fairness.
type simpleManager struct {
	mu      sync.Mutex
	held    []simpleLock
	waits   []txnlock.WaitStatus
	changed chan struct{} // closed and replaced on every release
	ranges  bool
}

type simpleLock struct {
	txn  txnlock.TxnID
	cf   txnlock.ColumnFamily
	r    txnlock.Range
	mode txnlock.Mode
}

func newSimpleManager(ranges bool) *simpleManager {
	return &simpleManager{changed: make(chan struct{}), ranges: ranges}
}

func (m *simpleManager) conflictsLocked(req txnlock.Request) []txnlock.TxnID {
	var out []txnlock.TxnID
	for _, h := range m.held {
		if h.txn != req.Txn && h.cf == req.CF && h.r.Overlaps(req.Range) && !h.mode.Compatible(req.Mode) {
			out = append(out, h.txn)
		}
	}
	return out
}

func (m *simpleManager) Lock(ctx context.Context, req txnlock.Request) error {
	if _, ok := req.Range.PointKey(); !ok && !m.ranges {
		return &txnlock.LockError{Op: "lock", Txn: req.Txn, Err: txnlock.ErrRangeNotSupported}
	}
	timeout := req.Timeout
	if timeout == txnlock.DefaultTimeout {
		timeout = 5 * time.Second
	}
	deadline := time.After(timeout)
	m.mu.Lock()
	defer m.mu.Unlock()
	waiting := false
	defer func() {
		if waiting {
			for i, w := range m.waits {
				if w.Txn == req.Txn {
					m.waits = append(m.waits[:i], m.waits[i+1:]...)
					break
				}
			}
		}
	}()
	for {
		blockers := m.conflictsLocked(req)
		if len(blockers) == 0 {
			m.held = append(m.held, simpleLock{req.Txn, req.CF, req.Range.Clone(), req.Mode})
			return nil
		}
		if timeout == txnlock.NoWait {
			return &txnlock.LockError{Op: "lock", Txn: req.Txn, Err: txnlock.ErrLockTimeout}
		}
		if !waiting {
			waiting = true
			m.waits = append(m.waits, txnlock.WaitStatus{Txn: req.Txn, CF: req.CF, Range: req.Range.Clone(), Mode: req.Mode, Blockers: blockers})
		}
		ch := m.changed
		m.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-deadline:
			err = txnlock.ErrLockTimeout
		}
		m.mu.Lock()
		if err != nil {
			return &txnlock.LockError{Op: "lock", Txn: req.Txn, Err: err}
		}
	}
}

func (m *simpleManager) releaseLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *simpleManager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range m.held {
		if h.txn == txn && h.cf == cf && h.r.Equal(r) {
			m.held = append(m.held[:i], m.held[i+1:]...)
			m.releaseLocked()
			return nil
		}
	}
	return txnlock.ErrNotHeld
}

func (m *simpleManager) UnlockAll(txn txnlock.TxnID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.held[:0]
	for _, h := range m.held {
		if h.txn != txn {
			kept = append(kept, h)
		}
	}
	m.held = kept
	m.releaseLocked()
	return nil
}

func (m *simpleManager) AddColumnFamily(txnlock.ColumnFamily) error  { return nil }
func (m *simpleManager) DropColumnFamily(txnlock.ColumnFamily) error { return nil }
func (m *simpleManager) Stats() txnlock.Stats                        { return txnlock.Stats{} }
func (m *simpleManager) Close() error                                { return nil }

func (m *simpleManager) Status() txnlock.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s txnlock.Status
	for _, h := range m.held {
		s.Locks = append(s.Locks, txnlock.LockStatus{CF: h.cf, Range: h.r, Mode: h.mode, Holders: []txnlock.TxnID{h.txn}})
	}
	s.Waits = append(s.Waits, m.waits...)
	return s
}
