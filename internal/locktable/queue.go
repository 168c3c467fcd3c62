package locktable

import (
	"iter"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/lockwait"
	"github.com/txnlock/txnlock/internal/waitsfor"
)

// Decision is what the core decides for a new request on a Lock.
type Decision uint8

const (
	// Covered: the transaction holds the Lock in the mode asked or a
	// stronger one; nothing changes (a lock is a set, not a counter).
	Covered Decision = iota + 1
	// Grant: the owner grants the request at once (Grant).
	Grant
	// GrantPast: the owner grants the request at once (Grant), past the
	// queued requests (a holder's upgrade): they now wait for its
	// transaction, an edge no new wait reports. The owner tells its
	// detector once its latch is released (detect.Graph.Passed).
	// Requests whose wait has failed but which have not left yet count:
	// the detector confirms what it finds.
	GrantPast
	// Wait: the request must wait. The owner queues a waiter (Enqueue) or
	// fails a request that does not wait.
	Wait
)

var decisionNames = [...]string{Covered: "covered", Grant: "grant", GrantPast: "grant past the queue", Wait: "wait"}

func (d Decision) String() string {
	if int(d) < len(decisionNames) && decisionNames[d] != "" {
		return decisionNames[d]
	}
	return "Decision(?)"
}

// Decide decides a new request of txn in mode. A holder's request that
// conflicts with no other holder is granted at once, ahead of any queue
// (an upgrade by the sole holder); any other request is granted only if it
// conflicts with no holder and with no request still queued (FIFO). It
// reports whether a request that must wait waits as an upgrade (txn
// holds the Lock Shared and asks Exclusive).
//
// blocked is what the owner knows beyond the Lock: that something outside
// it keeps the request from being granted (rangelock: a conflicting wide
// lock, or, for a request of a transaction that does not hold the key, a
// conflicting wide request queued earlier). Owners without such state
// pass false.
func (l *Lock) Decide(txn txnlock.TxnID, mode txnlock.Mode, blocked bool) (d Decision, upgrade bool) {
	held := l.ModeOf(txn)
	switch {
	case held.Covers(mode):
		return Covered, false
	case blocked, l.Conflicts(txn, mode):
		return Wait, held != 0
	case held != 0:
		if l.Queued() > 0 {
			return GrantPast, false
		}
		return Grant, false
	case l.conflictQueued(txn, mode):
		return Wait, false
	}
	return Grant, false
}

// conflictQueued reports whether a request still waiting, of another
// transaction, conflicts with a new request of txn in mode. It stops at
// the first one: on a contended key that is the front of the queue.
func (l *Lock) conflictQueued(txn txnlock.TxnID, mode txnlock.Mode) bool {
	if l.x == nil {
		return false
	}
	for w := l.x.q.Front(); w != nil; w = w.Next() {
		if w.Active() && w.Txn() != txn && !mode.Compatible(w.Lock.Mode) {
			return true
		}
	}
	return false
}

// Grant makes list's transaction hold the Lock in mode, or raises its mode
// if it holds it already, after Decide said Grant; the caller holds the
// latch of list. home is stored in a new Holder (Holder.Home).
func (l *Lock) Grant(list *Holds, mode txnlock.Mode, home uint16) { l.grant(list, mode, home) }

// Enqueue queues w, a request that Decide said must wait: an upgrade
// behind earlier upgrades and ahead of every other request, anything else
// at the back.
func (l *Lock) Enqueue(w *lockwait.Waiter) {
	x := l.ext()
	if !w.Upgrade {
		x.q.PushBack(w)
		return
	}
	at := x.q.Front()
	for at != nil && at.Upgrade {
		at = at.Next()
	}
	x.q.InsertBefore(w, at)
}

// Leave unlinks w, a waiter whose wait failed; the owner then runs Grants,
// as after a release (w may have been what kept the waiters behind it).
func (l *Lock) Leave(w *lockwait.Waiter) { l.x.q.Remove(w) }

// Queued returns the number of queued waiters, failed ones not yet gone
// included.
func (l *Lock) Queued() int {
	if l.x == nil {
		return 0
	}
	return l.x.q.Len()
}

// Front returns the first queued waiter, or nil; Next walks on.
func (l *Lock) Front() *lockwait.Waiter {
	if l.x == nil {
		return nil
	}
	return l.x.q.Front()
}

// Back returns the last queued waiter, or nil.
func (l *Lock) Back() *lockwait.Waiter {
	if l.x == nil {
		return nil
	}
	return l.x.q.Back()
}

// Grants yields, in queue order, the waiters that can be granted now: a
// waiter is granted when no holder of another transaction conflicts with
// it and, unless it is an upgrade, no waiter still waiting ahead of it of
// another transaction does. blocked, if not nil, tells what the owner
// knows beyond the Lock, as for Decide; xOutside that something outside
// the Lock holds the key Exclusive.
//
// For each waiter yielded the owner either grants it — w.Claim, then
// GrantWaiter, then w.Wake — or, if Claim fails (the wait ended
// meanwhile), leaves it for its goroutine to unlink. The walk stops as
// soon as no later waiter can be granted: once two transactions wait
// Exclusive ahead and no upgrade is left, or at the first blocked waiter
// while the key is held Exclusive. So a release on a hot key costs what it grants, not a walk of
// the queue. (One consequence: a second request of the Exclusive holder,
// queued before it got the lock, waits behind the first blocked waiter,
// until the holder releases.)
func (l *Lock) Grants(blocked func(w *lockwait.Waiter) bool, xOutside bool) iter.Seq[*lockwait.Waiter] {
	return func(yield func(*lockwait.Waiter) bool) {
		if l.x == nil {
			return
		}
		var ahead waitsAhead
		for w := l.x.q.Front(); w != nil; {
			next := w.Next()
			if !w.Active() {
				w = next
				continue
			}
			txn, mode := w.Txn(), w.Lock.Mode
			if l.Conflicts(txn, mode) || (!w.Upgrade && ahead.blocks(txn, mode)) || (blocked != nil && blocked(w)) {
				ahead.add(txn, mode)
				// Upgrades, at the front, skip the queue: the
				// summary stops the walk only behind them.
				if (ahead.xMulti && (next == nil || !next.Upgrade)) || xOutside || l.HeldExclusive() {
					return
				}
			} else if !yield(w) {
				return
			}
			w = next
		}
	}
}

// GrantWaiter grants w, a waiter that Grants yielded and whose Claim
// succeeded: it unlinks w and makes its transaction, whose Holds is list
// (under its latch), hold the Lock in w's mode, as Grant.
func (l *Lock) GrantWaiter(w *lockwait.Waiter, list *Holds, home uint16) {
	l.x.q.Remove(w)
	l.grant(list, w.Lock.Mode, home)
}

// waitsAhead summarizes the waiters a queue walk has passed that still
// wait: which transactions (one, or several) wait in any mode, and which
// wait Exclusive.
type waitsAhead struct {
	any, x           txnlock.TxnID
	anyMulti, xMulti bool
}

func (a *waitsAhead) add(txn txnlock.TxnID, mode txnlock.Mode) {
	note := func(one *txnlock.TxnID, multi *bool) {
		if *one == 0 {
			*one = txn
		} else if *one != txn {
			*multi = true
		}
	}
	note(&a.any, &a.anyMulti)
	if mode == txnlock.Exclusive {
		note(&a.x, &a.xMulti)
	}
}

// blocks reports whether a waiter passed so far is of another transaction
// than txn and conflicts with mode.
func (a *waitsAhead) blocks(txn txnlock.TxnID, mode txnlock.Mode) bool {
	if mode == txnlock.Exclusive {
		return a.anyMulti || (a.any != 0 && a.any != txn)
	}
	return a.xMulti || (a.x != 0 && a.x != txn)
}

// WaitsFor appends to dst whom w, a queued waiter, waits for
// (internal/waitsfor's rule): its nearest conflicting requests ahead, else
// its conflicting holders. It walks back to the nearest Exclusive request
// ahead, no further: an error report, never a scan of the queue.
func (l *Lock) WaitsFor(dst []txnlock.TxnID, w *lockwait.Waiter) []txnlock.TxnID {
	return l.waitsFor(dst, w.Txn(), w.Lock.Mode, w.Upgrade, w.Prev())
}

// WaitsForNew is WaitsFor for a request that is not queued: a request
// that does not wait, failed at once.
func (l *Lock) WaitsForNew(dst []txnlock.TxnID, txn txnlock.TxnID, mode txnlock.Mode, upgrade bool) []txnlock.TxnID {
	return l.waitsFor(dst, txn, mode, upgrade, l.Back())
}

func (l *Lock) waitsFor(dst []txnlock.TxnID, txn txnlock.TxnID, mode txnlock.Mode, upgrade bool, last *lockwait.Waiter) []txnlock.TxnID {
	if !upgrade {
		n := len(dst)
		if dst = waitsfor.Nearest(dst, Backward(last), txn, mode); len(dst) > n {
			return dst
		}
	}
	var buf [8]waitsfor.Holder
	return waitsfor.Holders(dst, l.appendHolderModes(buf[:0]), txn, mode)
}

// Backward yields the requests of the active waiters from last to the
// front of its queue, nearest first (waitsfor.Nearest's input).
func Backward(last *lockwait.Waiter) iter.Seq2[int, waitsfor.Request] {
	return func(yield func(int, waitsfor.Request) bool) {
		i := 0
		for w := range lockwait.Backward(last) {
			if !yield(i, waitsfor.Request{Txn: w.Txn(), Mode: w.Lock.Mode, Upgrade: w.Upgrade}) {
				return
			}
			i++
		}
	}
}

// appendHolderModes appends the holders with their modes to dst.
func (l *Lock) appendHolderModes(dst []waitsfor.Holder) []waitsfor.Holder {
	l.Holders(func(hd *Holder) bool {
		dst = append(dst, waitsfor.Holder{Txn: hd.list.Txn, Mode: hd.mode})
		return true
	})
	return dst
}

// SettledWaitsFor appends to dst whom w, a queued waiter, waits for once
// the Lock has settled: once every waiter whose wait has ended has left
// the queue and the queue has been granted again (Grants), as the
// goroutines of those waiters are about to make it. It appends nothing if
// w would then be granted. The detector confirms a cycle by it: a waiter
// behind a request whose wait has just failed is either granted when
// that request leaves or waits for someone else, never for the failed
// request. It walks the queue up to w.
func (l *Lock) SettledWaitsFor(dst []txnlock.TxnID, w *lockwait.Waiter) []txnlock.TxnID {
	var hbuf [8]waitsfor.Holder
	holders := l.appendHolderModes(hbuf[:0])
	var ahead waitsAhead
	var queued []waitsfor.Request // still waiting after the settling, ahead of w
	lastX := -1
	stopped := false // Grants would stop here: nobody after is granted
	for q := l.Front(); q != nil; q = q.Next() {
		if !q.Active() {
			continue
		}
		txn, mode := q.Txn(), q.Lock.Mode
		if stopped || waitsfor.Conflicts(holders, txn, mode) || (!q.Upgrade && ahead.blocks(txn, mode)) {
			if q == w {
				return waitsfor.Of(dst, holders, queued, lastX, txn, mode, q.Upgrade)
			}
			ahead.add(txn, mode)
			if mode == txnlock.Exclusive {
				lastX = len(queued)
			}
			queued = append(queued, waitsfor.Request{Txn: txn, Mode: mode, Upgrade: q.Upgrade})
			next := q.Next()
			stopped = stopped || (ahead.xMulti && (next == nil || !next.Upgrade)) || heldExclusive(holders)
			continue
		}
		if q == w {
			return dst // granted when the Lock settles
		}
		holders = waitsfor.Grant(holders, txn, mode)
	}
	return dst
}

func heldExclusive(holders []waitsfor.Holder) bool {
	return len(holders) == 1 && holders[0].Mode == txnlock.Exclusive
}
