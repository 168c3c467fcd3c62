package locktable

import (
	"fmt"
	"strings"

	"github.com/txnlock/txnlock"
)

// Verify checks l's own invariants and returns the first one broken, or
// nil: a Lock with neither holders nor waiters is not kept; no
// transaction holds it twice; an Exclusive holder is alone; every holder
// points back to l; no active waiter could be granted now unless a
// failed waiter, yet to leave and re-check the queue, is in it. Owners
// call it from their invariant checks, under l's latch; the slots of the
// holders are checked by InHolds, under their own latch.
func (l *Lock) Verify() error {
	if l.Empty() {
		return fmt.Errorf("key %q: an empty Lock is kept", l.Key())
	}
	seen := map[txnlock.TxnID]bool{}
	n, x := 0, false
	var err error
	l.Holders(func(hd *Holder) bool {
		n++
		x = x || hd.mode == txnlock.Exclusive
		switch {
		case hd.lock != l:
			err = fmt.Errorf("key %q: a holder points to another Lock", l.Key())
		case seen[hd.Txn()]:
			err = fmt.Errorf("key %q: %v holds it twice", l.Key(), hd.Txn())
		case !hd.mode.Valid():
			err = fmt.Errorf("key %q: %v holds it in mode %v", l.Key(), hd.Txn(), hd.mode)
		}
		seen[hd.Txn()] = true
		return err == nil
	})
	if err != nil {
		return err
	}
	if x && n > 1 {
		return fmt.Errorf("key %q: Exclusive held with %d holders", l.Key(), n)
	}
	// A wait can end (timeout, cancellation, a victim) without the
	// latch: Active is read again after Grants, and a waiter that ended
	// meanwhile makes the answer moot (it will leave and re-check the
	// queue).
	ended := func() bool {
		for w := l.Front(); w != nil; w = w.Next() {
			if !w.Active() {
				return true
			}
		}
		return false
	}
	if ended() {
		return nil
	}
	for w := range l.Grants(nil, false) {
		if ended() {
			return nil
		}
		return fmt.Errorf("key %q: %v waits for %v but could be granted (%s)", l.Key(), w.Txn(), w.Lock.Mode, l.describe())
	}
	return nil
}

// describe renders the holders and the queue, for an invariant's error.
func (l *Lock) describe() string {
	var sb strings.Builder
	sb.WriteString("holders:")
	l.Holders(func(hd *Holder) bool {
		fmt.Fprintf(&sb, " %d%v", uint64(hd.Txn()), hd.mode)
		return true
	})
	sb.WriteString("; queue:")
	for w := l.Front(); w != nil; w = w.Next() {
		fmt.Fprintf(&sb, " %d%v", uint64(w.Txn()), w.Lock.Mode)
		if w.Upgrade {
			sb.WriteString("(upgrade)")
		}
		if !w.Active() {
			sb.WriteString("(ended)")
		}
	}
	return sb.String()
}

// InHolds reports whether hd is at its slot in its transaction's Holds;
// the caller holds the latch of the Holds.
func (hd *Holder) InHolds() bool {
	return int(hd.slot) < len(hd.list.holds) && hd.list.holds[hd.slot] == hd
}
