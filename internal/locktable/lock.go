package locktable

import (
	"sync/atomic"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

// Lock is the lock of one key: its holders and its queue of waiting
// requests. It is in its Table from the first request on the key until
// the last holder and the last waiter are gone. Its owner's latch guards
// every field but the holders' slots (see Holder).
//
// The first holder's place is inline, so an uncontended lock is one
// 48-byte object plus its key. The other holders (always Shared) and the
// queue are in extra, made on the first second holder or first waiter
// and kept while the Lock is recycled. Exclusive is only ever held by a
// sole holder.
type Lock struct {
	keytable.Entry // the key; first, as keytable.Table requires
	x              *extra
	h              Holder // the inline holder's place; empty when h.list is nil
}

// Holder is one transaction's hold on a Lock. It is linked in two places:
// in the Lock (inline, or in extra.more) under the Lock's latch, and in
// the transaction's Holds (at slot) under the latch of the Holds. Its
// address is stable while it is linked.
type Holder struct {
	lock *Lock  // immutable
	list *Holds // the holder's Holds; nil: the inline place is empty
	slot int32  // its index in list.holds; guarded by the latch of list
	mode txnlock.Mode
	// Home is the owner's number for the table of the Lock (pointlock:
	// its column family's index), for a release that starts from the
	// transaction's Holds. Set at grant; the core never reads it.
	Home uint16
}

// Lock returns the Lock held.
func (hd *Holder) Lock() *Lock { return hd.lock }

// Txn returns the holding transaction.
func (hd *Holder) Txn() txnlock.TxnID { return hd.list.Txn }

// Mode returns the mode held.
func (hd *Holder) Mode() txnlock.Mode { return hd.mode }

// extra is the part of a Lock that only shared or contended keys need.
type extra struct {
	more []*Holder      // the holders other than the inline one
	q    lockwait.Queue // the waiters, FIFO, upgrades at the front
	det  Detector
	// grants counts the grants since the Lock got its extra part. It is
	// written under the owner's latch and read without it: a waiter
	// compares it with its value when it queued to tell whether its
	// holders may have changed (GrantCount).
	grants atomic.Uint32
}

// Detector is the owner's bookkeeping of a Lock for the deadlock
// detector. The core keeps it with the Lock and resets it on recycling;
// it never reads it.
type Detector struct {
	// Ref is [key, key] over a copy of the key, for the waiters' lock
	// references: the detector's reports keep them, so they cannot share
	// the Lock's recycled key buffer.
	Ref txnlock.Range
	// Own counts the owner's waiters that need more than the Lock knows
	// to say whom they wait for (rangelock: a point waiter behind a wide
	// one).
	Own int
	// Version counts the owner's changes of a Lock with waiters, for
	// answers its waiters keep (rangelock).
	Version uint64
}

// GrantCount returns the Lock's count of grants, which a queued waiter
// may read without the latch (lockwait.Waiter.WatchGrants).
func (l *Lock) GrantCount() *atomic.Uint32 { return &l.ext().grants }

// Det returns the Lock's detector bookkeeping, making room for it.
func (l *Lock) Det() *Detector { return &l.ext().det }

func (l *Lock) ext() *extra {
	if l.x == nil {
		l.x = &extra{}
	}
	return l.x
}

// Held reports whether anyone holds the Lock.
func (l *Lock) Held() bool { return l.h.list != nil || (l.x != nil && len(l.x.more) > 0) }

// Empty reports whether the Lock has neither holders nor queued waiters
// (failed waiters not yet gone included): its table may drop it.
func (l *Lock) Empty() bool { return !l.Held() && l.Queued() == 0 }

// Holders calls fn for each holder, in no particular order, until fn
// returns false.
func (l *Lock) Holders(fn func(hd *Holder) bool) {
	if l.h.list != nil && !fn(&l.h) {
		return
	}
	if l.x != nil {
		for _, hd := range l.x.more {
			if !fn(hd) {
				return
			}
		}
	}
}

// HolderOf returns txn's hold on the Lock, or nil.
func (l *Lock) HolderOf(txn txnlock.TxnID) *Holder {
	if l.h.list != nil && l.h.list.Txn == txn {
		return &l.h
	}
	if l.x != nil {
		for _, hd := range l.x.more {
			if hd.list.Txn == txn {
				return hd
			}
		}
	}
	return nil
}

// ModeOf returns txn's mode on the Lock (0: it does not hold it).
func (l *Lock) ModeOf(txn txnlock.TxnID) txnlock.Mode {
	if hd := l.HolderOf(txn); hd != nil {
		return hd.mode
	}
	return 0
}

// Conflicts reports whether a holder other than txn holds the Lock in a
// mode incompatible with mode.
func (l *Lock) Conflicts(txn txnlock.TxnID, mode txnlock.Mode) bool {
	found := false
	l.Holders(func(hd *Holder) bool {
		found = hd.list.Txn != txn && !mode.Compatible(hd.mode)
		return !found
	})
	return found
}

// HeldExclusive reports whether the Lock is held Exclusive.
func (l *Lock) HeldExclusive() bool {
	if l.h.list != nil {
		return l.h.mode == txnlock.Exclusive
	}
	return l.x != nil && len(l.x.more) == 1 && l.x.more[0].mode == txnlock.Exclusive
}

// AppendHolders appends the holders' transactions to dst.
func (l *Lock) AppendHolders(dst []txnlock.TxnID) []txnlock.TxnID {
	l.Holders(func(hd *Holder) bool {
		dst = append(dst, hd.list.Txn)
		return true
	})
	return dst
}

// grant makes list's transaction hold the Lock in mode, or raises its
// mode if it holds it already. home is stored in a new Holder.
func (l *Lock) grant(list *Holds, mode txnlock.Mode, home uint16) {
	if l.x != nil {
		l.x.grants.Add(1)
	}
	if hd := l.HolderOf(list.Txn); hd != nil {
		hd.mode = hd.mode.Max(mode)
		return
	}
	hd := &l.h
	if hd.list != nil {
		hd = &Holder{}
		x := l.ext()
		x.more = append(x.more, hd)
	}
	hd.lock, hd.list, hd.mode, hd.Home = l, list, mode, home
	hd.slot = int32(len(list.holds))
	list.holds = append(list.holds, hd)
}

// Release removes txn's hold on the Lock, from the Lock and from txn's
// Holds (whose latch the caller holds). It reports false, changing
// nothing, if txn does not hold the Lock. It grants nothing: the owner
// then runs Grants.
func (l *Lock) Release(txn txnlock.TxnID) bool {
	hd := l.HolderOf(txn)
	if hd == nil {
		return false
	}
	hd.list.remove(hd)
	l.unlink(hd)
	return true
}

// unlink takes hd out of the Lock (not out of its Holds).
func (l *Lock) unlink(hd *Holder) {
	if hd == &l.h {
		l.h = Holder{}
		return
	}
	more := l.x.more
	for i, o := range more {
		if o == hd {
			more[i] = more[len(more)-1]
			more[len(more)-1] = nil
			l.x.more = more[:len(more)-1]
			return
		}
	}
}

// reset empties a Lock that has neither holders nor waiters for reuse,
// keeping the buffers of its extra part.
func (l *Lock) reset() {
	if x := l.x; x != nil {
		x.more = x.more[:0]
		x.det = Detector{}
	}
}

// List returns the Holds the hold is linked in.
func (hd *Holder) List() *Holds { return hd.list }
