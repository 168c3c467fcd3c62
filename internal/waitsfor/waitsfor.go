// Package waitsfor computes whom a queued lock request waits for, the rule
// that txnlock.WaitStatus.Blockers documents, for both managers' Status and
// for the blockers of a timed-out request's error.
//
// A request waits for the conflicting holders when no conflicting request
// is queued ahead of it, and otherwise for the nearest conflicting requests
// ahead: an Exclusive request for the request directly ahead if that one is
// Exclusive, or for the whole run of Shared requests directly ahead of it;
// a Shared request for the nearest Exclusive request ahead. Each of those
// waits in turn for its own nearest requests or for the holders, so
// everyone a request truly waits for is reachable, transitively, and the
// lists of a queue of N requests add up to O(N) entries. Listing every
// conflicting pair instead (as InnoDB's data_lock_waits does) is O(N²) on a
// hot key.
//
// An upgrade (a holder that asks Exclusive) waits for the other holders
// only: it is queued ahead of every ordinary request.
//
// Everything here is pure: no locks, no goroutines. Managers copy their
// queues under their latches and call this package after releasing them.
package waitsfor

import (
	"iter"
	"slices"

	"github.com/txnlock/txnlock"
)

// Request is a queued request, as a snapshot.
type Request struct {
	Txn     txnlock.TxnID
	Mode    txnlock.Mode
	Upgrade bool
}

// Holder is a holder of the lock a queue waits for.
type Holder struct {
	Txn  txnlock.TxnID
	Mode txnlock.Mode
}

// Holders appends to dst, once each and sorted, the holders other than txn
// whose mode conflicts with mode.
func Holders(dst []txnlock.TxnID, holders []Holder, txn txnlock.TxnID, mode txnlock.Mode) []txnlock.TxnID {
	base := len(dst)
	for _, h := range holders {
		if h.Txn != txn && !h.Mode.Compatible(mode) {
			dst = append(dst, h.Txn)
		}
	}
	return sortUnique(dst, base)
}

// Ahead appends to dst the nearest requests of ahead (the requests queued
// ahead of a request of txn in mode, in queue order, all overlapping it)
// that the request waits for, sorted and once each. lastX is the index of
// the last Exclusive request in ahead, or -1; a caller that scans a queue
// keeps it as it goes (Scanner), so that Ahead costs what it reports. It
// returns dst unchanged if no conflicting request of another transaction is
// ahead: the request then waits for the conflicting holders.
func Ahead(dst []txnlock.TxnID, ahead []Request, lastX int, txn txnlock.TxnID, mode txnlock.Mode) []txnlock.TxnID {
	if mode == txnlock.Shared {
		// Only an Exclusive request conflicts: start at the last one.
		ahead = ahead[:lastX+1]
	}
	n := nearest{dst: dst, base: len(dst), txn: txn, mode: mode}
	for i := len(ahead) - 1; i >= 0 && !n.step(ahead[i]); i-- {
	}
	return n.result()
}

// Nearest is Ahead for a caller that walks its queue backwards from the
// request: back yields the requests ahead of it, nearest first, with their
// positions (ignored). It stops as soon as the rule is satisfied, so it
// costs the distance to the nearest Exclusive request ahead.
func Nearest(dst []txnlock.TxnID, back iter.Seq2[int, Request], txn txnlock.TxnID, mode txnlock.Mode) []txnlock.TxnID {
	n := nearest{dst: dst, base: len(dst), txn: txn, mode: mode}
	for _, r := range back {
		if n.step(r) {
			break
		}
	}
	return n.result()
}

// nearest is the rule, one request ahead at a time, nearest first.
type nearest struct {
	dst  []txnlock.TxnID
	base int
	txn  txnlock.TxnID
	mode txnlock.Mode
}

// step takes the next request ahead and reports whether the list is
// complete.
func (n *nearest) step(r Request) bool {
	switch {
	case r.Txn == n.txn:
		// Its own request: never a blocker.
	case r.Mode == txnlock.Shared && n.mode == txnlock.Exclusive:
		n.dst = append(n.dst, r.Txn) // the run of Shared requests directly ahead
	case r.Mode == txnlock.Exclusive && len(n.dst) == n.base:
		n.dst = append(n.dst, r.Txn)
		return true
	case r.Mode == txnlock.Exclusive:
		return true // the run ends at an Exclusive request
	}
	return false
}

func (n *nearest) result() []txnlock.TxnID { return sortUnique(n.dst, n.base) }

// Of appends to dst whom a request of txn in mode waits for, queued behind
// ahead (lastX as for Ahead), on a lock with the given holders: its
// nearest conflicting requests ahead, or else its conflicting holders. An
// upgrade waits for the holders only.
func Of(dst []txnlock.TxnID, holders []Holder, ahead []Request, lastX int, txn txnlock.TxnID, mode txnlock.Mode, upgrade bool) []txnlock.TxnID {
	if !upgrade {
		n := len(dst)
		if dst = Ahead(dst, ahead, lastX, txn, mode); len(dst) > n {
			return dst
		}
	}
	return Holders(dst, holders, txn, mode)
}

// Spread appends to dst, sorted and once each, whom a request of txn in
// mode waits for among ahead, the requests queued ahead of it that overlap
// it, in queue order, when they are not one queue: a range overlaps
// requests on keys far apart, which do not wait for each other. Walking
// back from the nearest, it lists each conflicting request unless a
// conflicting request behind it, listed or reached through one listed,
// waits for it (overlaps it in an incompatible mode, and does not skip:
// MaySkip): everyone the request waits for is reachable, and a run on one
// key is listed as Ahead lists it. It returns dst unchanged if no
// conflicting request of another transaction is ahead. WaitsForT is not
// read.
//
// It costs O(len(ahead)) plus, for each conflicting request, the reached
// requests it is compared with.
func Spread(dst []txnlock.TxnID, ahead []Queued, txn txnlock.TxnID, mode txnlock.Mode) []txnlock.TxnID {
	base := len(dst)
	var reachedS, reachedX []int // the conflicting requests reached so far, by mode
	for i := len(ahead) - 1; i >= 0; i-- {
		o := &ahead[i]
		if o.Txn == txn || o.Mode.Compatible(mode) {
			continue
		}
		waited := anyWaitsFor(ahead, reachedX, o) ||
			(o.Mode == txnlock.Exclusive && anyWaitsFor(ahead, reachedS, o))
		if !waited {
			dst = append(dst, o.Txn)
		}
		if o.Mode == txnlock.Exclusive {
			reachedX = append(reachedX, i)
		} else {
			reachedS = append(reachedS, i)
		}
	}
	return sortUnique(dst, base)
}

// anyWaitsFor reports whether one of the requests ahead[by] surely waits
// for o: the caller passes those whose mode conflicts with o's, all queued
// behind o.
func anyWaitsFor(ahead []Queued, by []int, o *Queued) bool {
	for _, j := range by {
		if p := &ahead[j]; !p.MaySkip && p.Txn != o.Txn && p.Range.Overlaps(o.Range) {
			return true
		}
	}
	return false
}

// Scanner walks a queue of one lock front to back and tells each request
// whom it waits for, in O(1) per request plus what it reports.
type Scanner struct {
	holders []Holder
	ahead   []Request
	lastX   int
}

// NewScanner starts a scan of the queue of a lock with the given holders.
// ahead is a buffer the scanner may reuse (its contents are discarded).
func NewScanner(holders []Holder, ahead []Request) Scanner {
	return Scanner{holders: holders, ahead: ahead[:0], lastX: -1}
}

// Next appends to dst whom r, the next request of the queue, waits for, and
// then moves r into the part of the queue that is ahead of the rest.
func (s *Scanner) Next(dst []txnlock.TxnID, r Request) []txnlock.TxnID {
	dst = Of(dst, s.holders, s.ahead, s.lastX, r.Txn, r.Mode, r.Upgrade)
	s.Push(r)
	return dst
}

// Push moves r into the part of the queue that is ahead, without asking
// whom it waits for (a request whose list someone else computes).
func (s *Scanner) Push(r Request) {
	if r.Mode == txnlock.Exclusive {
		s.lastX = len(s.ahead)
	}
	s.ahead = append(s.ahead, r)
}

// Ahead returns the scanner's buffer, for reuse by a later NewScanner.
func (s *Scanner) Ahead() []Request { return s.ahead }

func sortUnique(dst []txnlock.TxnID, base int) []txnlock.TxnID {
	if len(dst)-base > 1 {
		slices.Sort(dst[base:])
		dst = append(dst[:base], slices.Compact(dst[base:])...)
	}
	return dst
}

// Queued is a request queued ahead of a new request of some transaction
// T, as Skipped sees it.
type Queued struct {
	Txn   txnlock.TxnID
	Mode  txnlock.Mode
	Range txnlock.Range
	// WaitsForT reports that it conflicts with a lock T holds.
	WaitsForT bool
	// Idle reports that its transaction held no lock when it queued: it
	// keeps nobody waiting but those queued behind it, and a request of
	// a transaction that holds one passes it (Skipped). Both sides are
	// settled when the requests queue, so that what a transaction takes
	// or lets go of while its request waits changes no one's wait.
	Idle bool
	// MaySkip reports that the request may not wait for every request
	// ahead of it that it conflicts with: its transaction holds a lock
	// (or held one when it queued), so it skips the requests that wait
	// for that and those of idle transactions (Skipped), or it is an
	// upgrade, which waits for no queued request. Spread does not take it
	// to reach the requests ahead of it.
	MaySkip bool
}

// Skipped reports which of ahead (the requests queued ahead of a request
// of T that overlap it or lead to one that does, in queue order) T's
// request skips. Two rules, both for a holder's request only (the first
// needs WaitsForT, which only a holder's locks make true; holder says
// whether the second applies: T held a lock when its request queued):
//
//   - It never waits for a queued request that cannot be granted before T
//     releases something, since that would be a certain deadlock: the
//     requests that conflict with a lock T holds, and the requests blocked
//     by such a request, directly or through a chain of queued requests
//     (an earlier, overlapping, incompatible request of another
//     transaction). An upgrade, a holder's Exclusive request on what it
//     holds Shared, skips the whole queue by this rule (every queued
//     request conflicts with its Shared lock or is behind one that does).
//   - It does not wait for a queued request of an idle transaction (one
//     that holds no lock, Queued.Idle): that request keeps no one waiting,
//     while T's locks may, so T goes first, as InnoDB's contention-aware
//     scheduling grants first to the transaction others wait for. The
//     requests behind an idle one are not skipped for it: a holder's
//     request among them passes it too.
//
// T still waits for every conflicting holder and every other conflicting
// request ahead, and its request is queued ahead of the requests it
// skips. Only a holder's request passes another: requests of idle
// transactions keep their order among themselves.
//
// It costs O(len(ahead)) for point requests, plus the pairs of a wide
// request with the skipped requests ahead of it.
func Skipped(ahead []Queued, holder bool) []bool {
	skip := make([]bool, len(ahead))
	var keys map[string]*keyState
	var wide, points []int // skipped wide and point requests so far
	blocks := func(p, c Queued) bool {
		return p.Txn != c.Txn && !p.Mode.Compatible(c.Mode) && p.Range.Overlaps(c.Range)
	}
	for i, c := range ahead {
		key, isPoint := c.Range.PointKey()
		s := c.WaitsForT
		if !s && isPoint && keys != nil {
			if k := keys[string(key)]; k != nil {
				s = k.x.other(c.Txn) || (c.Mode == txnlock.Exclusive && k.any.other(c.Txn))
			}
		}
		for _, p := range wide {
			if s {
				break
			}
			s = blocks(ahead[p], c)
		}
		if !isPoint {
			for _, p := range points {
				if s {
					break
				}
				s = blocks(ahead[p], c)
			}
		}
		if !s {
			skip[i] = holder && c.Idle
			continue
		}
		skip[i] = true
		if !isPoint {
			wide = append(wide, i)
			continue
		}
		points = append(points, i)
		if keys == nil {
			keys = map[string]*keyState{}
		}
		k := keys[string(key)]
		if k == nil {
			k = &keyState{}
			keys[string(key)] = k
		}
		k.any.add(c.Txn)
		if c.Mode == txnlock.Exclusive {
			k.x.add(c.Txn)
		}
	}
	return skip
}

// keyState is what Skipped remembers of the skipped requests on one key:
// their transactions, in any mode and Exclusive.
type keyState struct{ any, x txnSet }

// txnSet is a set of transactions that knows its only member, if one.
type txnSet struct {
	one   txnlock.TxnID
	multi bool
}

func (s *txnSet) add(t txnlock.TxnID) {
	if s.one == 0 {
		s.one = t
	} else if s.one != t {
		s.multi = true
	}
}

// other reports whether the set has a member other than t.
func (s *txnSet) other(t txnlock.TxnID) bool { return s.multi || (s.one != 0 && s.one != t) }

// Conflicts reports whether a holder other than txn holds the lock in a
// mode that conflicts with mode.
func Conflicts(holders []Holder, txn txnlock.TxnID, mode txnlock.Mode) bool {
	for _, h := range holders {
		if h.Txn != txn && !h.Mode.Compatible(mode) {
			return true
		}
	}
	return false
}

// Grant returns holders with txn holding the lock in mode: added, or its
// mode raised.
func Grant(holders []Holder, txn txnlock.TxnID, mode txnlock.Mode) []Holder {
	for i := range holders {
		if holders[i].Txn == txn {
			if mode == txnlock.Exclusive {
				holders[i].Mode = mode
			}
			return holders
		}
	}
	return append(holders, Holder{Txn: txn, Mode: mode})
}
