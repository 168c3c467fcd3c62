package locktable

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/keytable"
	"github.com/txnlock/txnlock/internal/lockwait"
)

func TestLayout(t *testing.T) {
	require.True(t, keytable.Valid[Lock](), "Lock must start with keytable.Entry")
	require.Equal(t, uintptr(48), unsafe.Sizeof(Lock{}), "an uncontended lock is one 48-byte object")
}

// modelKey is the reference for one key: holders and the queue of
// waiting requests, in order.
type modelKey struct {
	holders map[txnlock.TxnID]txnlock.Mode
	queue   []modelReq
}

type modelReq struct {
	txn     txnlock.TxnID
	mode    txnlock.Mode
	upgrade bool
	w       *lockwait.Waiter
}

func (k *modelKey) names() []string {
	var ws []*lockwait.Waiter
	for _, r := range k.queue {
		ws = append(ws, r.w)
	}
	return names(ws)
}

func (k *modelKey) conflicts(txn txnlock.TxnID, mode txnlock.Mode) bool {
	for h, m := range k.holders {
		if h != txn && !m.Compatible(mode) {
			return true
		}
	}
	return false
}

// grantable is the rule, stated plainly: no conflicting holder, and,
// unless an upgrade, no conflicting request of another transaction
// queued ahead.
func (k *modelKey) grantable(i int) bool {
	r := k.queue[i]
	if k.conflicts(r.txn, r.mode) {
		return false
	}
	if r.upgrade {
		return true
	}
	for _, a := range k.queue[:i] {
		if a.txn != r.txn && !a.mode.Compatible(r.mode) {
			return false
		}
	}
	return true
}

// settle grants, in queue order, every request the rule allows, until
// none is left; it returns the granted waiters.
func (k *modelKey) settle() []*lockwait.Waiter {
	var out []*lockwait.Waiter
	for i := 0; i < len(k.queue); {
		if !k.grantable(i) {
			i++
			continue
		}
		r := k.queue[i]
		k.holders[r.txn] = k.holders[r.txn].Max(r.mode)
		k.queue = slices.Delete(k.queue, i, i+1)
		out = append(out, r.w)
		i = 0
	}
	return out
}

// TestModel drives Locks with random requests, releases and failed waits
// on a few keys, and checks every decision, every grant and every queue
// against modelKey. A transaction has at most one request in flight per
// key (Grants' documented exception is about two).
func TestModel(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("LOCKTABLE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (LOCKTABLE_SEED repeats it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const keys, txns = 3, 5
	for round := range 200 {
		var tab Table
		holds := map[txnlock.TxnID]*Holds{}
		for txn := txnlock.TxnID(1); txn <= txns; txn++ {
			holds[txn] = &Holds{Txn: txn}
		}
		model := make([]*modelKey, keys)
		for i := range model {
			model[i] = &modelKey{holders: map[txnlock.TxnID]txnlock.Mode{}}
		}
		lockOf := func(k int) *Lock {
			key := []byte(fmt.Sprintf("k%d", k))
			l, pos := tab.Find(uint64(k)<<60, key)
			if l == nil {
				l = tab.New(pos, uint64(k)<<60, key)
			}
			return l
		}
		drop := func(k int, l *Lock) {
			if l.Empty() {
				require.True(t, tab.Delete(uint64(k)<<60, l))
			}
		}
		grantAll := func(k int, l *Lock) []*lockwait.Waiter {
			var got []*lockwait.Waiter
			for w := range l.Grants(nil, false) {
				require.True(t, w.Claim())
				l.GrantWaiter(w, holds[w.Txn()], 0)
				got = append(got, w)
			}
			return got
		}
		for step := range 300 {
			k := rng.IntN(keys)
			mk := model[k]
			txn := txnlock.TxnID(1 + rng.IntN(txns))
			l := lockOf(k)
			where := fmt.Sprintf("round %d step %d key %d txn %d: before, holders %v queue %v", round, step, k, txn, mk.holders, mk.names())
			switch op := rng.IntN(10); {
			case op < 5: // a request, unless txn already waits on k
				if slices.ContainsFunc(mk.queue, func(r modelReq) bool { return r.txn == txn }) {
					break
				}
				mode := txnlock.Shared
				if rng.IntN(2) == 0 {
					mode = txnlock.Exclusive
				}
				held, isHeld := mk.holders[txn]
				d, upgrade := l.Decide(txn, mode, false)
				switch {
				case isHeld && held.Covers(mode):
					require.Equal(t, Covered, d, where)
				case !mk.conflicts(txn, mode) && (isHeld || !slices.ContainsFunc(mk.queue, func(r modelReq) bool {
					return r.txn != txn && !r.mode.Compatible(mode)
				})):
					want := Grant
					if isHeld && len(mk.queue) > 0 {
						want = GrantPast // a holder's request past the queue
					}
					require.Equal(t, want, d, where)
					l.Grant(holds[txn], mode, 0)
					mk.holders[txn] = held.Max(mode)
				default:
					require.Equal(t, Wait, d, where)
					require.Equal(t, isHeld, upgrade, where)
					w := lockwait.New(txn, txnlock.LockRef{Mode: mode}, time.Time{})
					w.Upgrade = upgrade
					l.Enqueue(w)
					r := modelReq{txn, mode, upgrade, w}
					at := len(mk.queue)
					if upgrade {
						at = 0
						for at < len(mk.queue) && mk.queue[at].upgrade {
							at++
						}
					}
					mk.queue = slices.Insert(mk.queue, at, r)
				}
			case op < 8: // release
				_, isHeld := mk.holders[txn]
				require.Equal(t, isHeld, l.Release(txn), where)
				delete(mk.holders, txn)
				require.Equal(t, names(mk.settle()), names(grantAll(k, l)), where)
			default: // a waiter's wait fails, and it leaves
				if len(mk.queue) == 0 {
					break
				}
				i := rng.IntN(len(mk.queue))
				w := mk.queue[i].w
				require.True(t, w.Fail(txnlock.ErrLockTimeout))
				mk.queue = slices.Delete(mk.queue, i, i+1)
				// Until it leaves, the failed waiter is skipped.
				require.Equal(t, names(mk.settle()), names(grantAll(k, l)), where)
				l.Leave(w)
				require.Empty(t, grantAll(k, l), where)
			}
			// The Lock matches the model.
			got := map[txnlock.TxnID]txnlock.Mode{}
			l.Holders(func(hd *Holder) bool {
				got[hd.Txn()] = hd.mode
				require.True(t, hd.InHolds(), where)
				return true
			})
			require.Equal(t, mk.holders, got, where)
			var q []*lockwait.Waiter
			for w := l.Front(); w != nil; w = w.Next() {
				q = append(q, w)
			}
			var want []*lockwait.Waiter
			for _, r := range mk.queue {
				want = append(want, r.w)
			}
			require.Equal(t, names(want), names(q), where)
			if !l.Empty() {
				require.NoError(t, l.Verify(), where)
			}
			drop(k, l)
		}
	}
}

// names describes waiters for a failure message: transaction, mode and
// U for an upgrade.
func names(ws []*lockwait.Waiter) []string {
	var out []string
	for _, w := range ws {
		s := fmt.Sprintf("t%d%v", w.Txn(), w.Lock.Mode)
		if w.Upgrade {
			s += "U"
		}
		out = append(out, s)
	}
	return out
}
