package pointlock

import (
	"fmt"

	"github.com/txnlock/txnlock"
)

// checkInvariants walks every stripe under its mutex and returns the first
// broken invariant, or nil:
//   - an entry is in the map only while it has a holder or a linked waiter;
//   - h.rec == nil iff nobody holds it; an Exclusive holder is alone;
//   - every hold is at its slot in its transaction's record;
//   - the first waiter cannot be granted (nobody who could be granted is
//     left waiting), unless a failed waiter that has yet to unlink itself
//     (and re-check the queue) is ahead of it;
//   - the stripe's held count matches.
func (m *Manager) checkInvariants() error {
	for _, lm := range m.cfs.Load().byIdx {
		if lm == nil {
			continue
		}
		for i := range lm.strip {
			st := &lm.strip[i]
			st.mu.Lock()
			err := m.checkStripeLocked(lm, st)
			st.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) checkStripeLocked(lm *lockMap, st *stripe) error {
	held := int64(0)
	var err error
	n := 0
	st.tab.All(func(h uint64, e *entry) bool {
		n++
		if err == nil {
			err = m.checkEntryLocked(lm, st, h, e, &held)
		}
		return true
	})
	if err != nil {
		return err
	}
	if n != st.tab.Len() {
		return fmt.Errorf("cf %d stripe: table counts %d, has %d", lm.cf, st.tab.Len(), n)
	}
	if held != st.held {
		return fmt.Errorf("cf %d stripe: held %d, counted %d", lm.cf, held, st.held)
	}
	return nil
}

func (m *Manager) checkEntryLocked(lm *lockMap, st *stripe, h uint64, e *entry, held *int64) error {
	if m.hashString(e.Key()) != h {
		return fmt.Errorf("cf %d key %q under the wrong hash", lm.cf, e.Key())
	}
	if e.emptyLocked() {
		return fmt.Errorf("cf %d key %q: empty entry in the map", lm.cf, e.Key())
	}
	if st.tab.FindString(h, e.Key()) != e {
		return fmt.Errorf("cf %d key %q cannot be found", lm.cf, e.Key())
	}
	if e.h.rec != nil {
		*held++
	}
	holds := []*hold{}
	if e.h.rec != nil {
		holds = append(holds, &e.h)
		if e.h.e != e {
			return fmt.Errorf("key %q: embedded hold points elsewhere", e.Key())
		}
	}
	if e.x != nil {
		if e.h.rec == nil && len(e.x.more) > 0 {
			return fmt.Errorf("key %q: shared holders without the embedded one", e.Key())
		}
		holds = append(holds, e.x.more...)
	}
	seen := map[txnlock.TxnID]bool{}
	for _, hd := range holds {
		if seen[hd.rec.txn] {
			return fmt.Errorf("key %q: %v holds twice", e.Key(), hd.rec.txn)
		}
		seen[hd.rec.txn] = true
		if hd.mode == txnlock.Exclusive && len(holds) > 1 {
			return fmt.Errorf("key %q: Exclusive holder %v is not alone", e.Key(), hd.rec.txn)
		}
		if hd.e != e || hd.cfIdx != lm.idx {
			return fmt.Errorf("key %q: hold of %v points elsewhere", e.Key(), hd.rec.txn)
		}
		ts := m.txns.Stripe(hd.rec.txn)
		ts.Mu.Lock()
		ok := int(hd.slot) < len(hd.rec.holds) && hd.rec.holds[hd.slot] == hd && ts.GetLocked(hd.rec.txn) == hd.rec
		ts.Mu.Unlock()
		if !ok {
			return fmt.Errorf("key %q: hold of %v not at its slot in a live record", e.Key(), hd.rec.txn)
		}
	}
	if e.x == nil {
		return nil
	}
	for w := e.x.q.Front(); w != nil; w = w.Next() {
		if !w.Active() {
			// A waiter that failed and has yet to unlink itself:
			// its removal will re-check the queue behind it.
			break
		}
		if e.grantableLocked(w.Txn(), w.Lock.Mode) && !m.closed.Load() {
			return fmt.Errorf("cf %d key %q: %v waits for %v but could be granted", lm.cf, e.Key(), w.Txn(), w.Lock.Mode)
		}
		break
	}
	return nil
}
