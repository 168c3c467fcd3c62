package pointlock

import (
	"fmt"

	"github.com/txnlock/txnlock/internal/locktable"
)

// checkInvariants walks every stripe under its mutex and returns the first
// broken invariant, or nil:
//   - each Lock's own (locktable.Lock.Verify), while the manager is open;
//   - every Lock is under its key's hash;
//   - every hold is at its slot in its transaction's live record, and
//     names its column family;
//   - the stripe's held count matches.
func (m *Manager) checkInvariants() error {
	for _, lm := range m.sh.Fams.All {
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
	st.tab.All(func(h uint64, l *locktable.Lock) bool {
		n++
		if err == nil {
			err = m.checkLockLocked(lm, st, h, l, &held)
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

func (m *Manager) checkLockLocked(lm *lockMap, st *stripe, h uint64, l *locktable.Lock, held *int64) error {
	if hk, _ := m.hashString(l.Key()); hk != h {
		return fmt.Errorf("cf %d key %q under the wrong hash", lm.cf, l.Key())
	}
	if st.tab.FindString(h, l.Key()) != l {
		return fmt.Errorf("cf %d key %q cannot be found", lm.cf, l.Key())
	}
	if m.sh.Closed() {
		return nil
	}
	if err := l.Verify(); err != nil {
		return fmt.Errorf("cf %d: %w", lm.cf, err)
	}
	if l.Held() {
		*held++
	}
	var err error
	l.Holders(func(hd *locktable.Holder) bool {
		ok := m.sh.Txns.Recorded(hd)
		switch {
		case !ok:
			err = fmt.Errorf("key %q: hold of %v not at its slot in a live record", l.Key(), hd.Txn())
		case hd.Home != lm.idx:
			err = fmt.Errorf("key %q: hold of %v names column family index %d", l.Key(), hd.Txn(), hd.Home)
		}
		return err == nil
	})
	return err
}
