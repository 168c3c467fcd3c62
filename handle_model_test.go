package txnlock_test

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/locktree"
)

// fakeManager is a Manager over one locktree per column family: it grants
// every request at once, unlocks keys as rangelock does (part of a held
// range keeps the rest; ErrNotHeld unless every key is held), and counts
// the requests it got.
type fakeManager struct {
	mu       sync.Mutex
	trees    map[txnlock.ColumnFamily]*locktree.Tree
	requests int
}

func newFakeManager() *fakeManager {
	return &fakeManager{trees: map[txnlock.ColumnFamily]*locktree.Tree{}}
}

func (f *fakeManager) tree(cf txnlock.ColumnFamily) *locktree.Tree {
	if f.trees[cf] == nil {
		f.trees[cf] = locktree.New()
	}
	return f.trees[cf]
}

func (f *fakeManager) Lock(_ context.Context, req txnlock.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	f.tree(req.CF).Acquire(req.Txn, req.Range, req.Mode)
	return nil
}

func (f *fakeManager) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.tree(cf).Release(txn, r, nil); err != nil {
		return &txnlock.LockError{Op: "unlock", Txn: txn, CF: cf, Range: r, Err: err}
	}
	return nil
}

func (f *fakeManager) UnlockAll(txn txnlock.TxnID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.trees {
		t.ReleaseAll(txn, nil)
	}
	return nil
}

// modeAt is the mode txn holds key in, in cf (0: not held).
func (f *fakeManager) modeAt(txn txnlock.TxnID, cf txnlock.ColumnFamily, key []byte) txnlock.Mode {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, k := f.tree(cf), txnlock.Point(key)
	switch {
	case t.Covered(txn, k, txnlock.Exclusive):
		return txnlock.Exclusive
	case t.Covered(txn, k, txnlock.Shared):
		return txnlock.Shared
	}
	return 0
}

func (f *fakeManager) AddColumnFamily(txnlock.ColumnFamily) error  { return nil }
func (f *fakeManager) DropColumnFamily(txnlock.ColumnFamily) error { return nil }
func (f *fakeManager) Status() txnlock.Status                      { return txnlock.Status{} }
func (f *fakeManager) Stats() txnlock.Stats                        { return txnlock.Stats{} }
func (f *fakeManager) Close() error                                { return nil }

// The model's key space is cut into atoms: each letter of the universe,
// and each gap between two letters (before the first, after the last).
// Every range the test builds has its ends at letters or infinite, so it
// holds an atom wholly or not at all, and a set of atoms (a bit mask) is
// exactly a set of keys. rep(i) is a key of atom i.
type universe struct {
	letters int
	points  int // in 8ths: how often randomRange returns a point
}

func (u universe) atoms() int { return 2*u.letters + 1 }

func (u universe) rep(i int) []byte {
	if i == 0 {
		return []byte{} // the gap before "a": the empty key
	}
	l := byte('a' + (i-1)/2)
	if i%2 == 1 {
		return []byte{l}
	}
	return []byte{l, 0} // the gap after l
}

// atomsOf is the set of atoms r holds, computed by asking r, not by the
// code under test.
func (u universe) atomsOf(r txnlock.Range) uint64 {
	var a uint64
	for i := range u.atoms() {
		if r.Contains(u.rep(i)) {
			a |= 1 << i
		}
	}
	return a
}

// randomRange returns a point (u.points in 8) or a range with ends at
// letters or infinite.
func (u universe) randomRange(rng *rand.Rand) txnlock.Range {
	letter := func() []byte { return []byte{byte('a' + rng.IntN(u.letters))} }
	if rng.IntN(8) < u.points {
		return txnlock.Point(letter())
	}
	for {
		// Either end open, or a letter included or excluded.
		end := func(open txnlock.Bound) txnlock.Bound {
			switch rng.IntN(5) {
			case 0:
				return open
			case 1, 2:
				return txnlock.BoundAfter(letter())
			}
			return txnlock.BoundBefore(letter())
		}
		if r, err := txnlock.NewRange(end(txnlock.NegInf()), end(txnlock.PosInf())); err == nil {
			return r
		}
	}
}

// refEntry is a lock in the reference: a plain set of atoms.
type refEntry struct {
	mgr   int
	cf    txnlock.ColumnFamily
	atoms uint64
	point bool
	mode  txnlock.Mode
	seq   int
}

// refTxn is the reference record: a list scanned in full for every
// question, entries never split (a hole is a cleared bit).
type refTxn struct {
	entries   []refEntry
	seq       int
	rollbacks int
}

func (t *refTxn) covers(mgr int, cf txnlock.ColumnFamily, atoms uint64, mode txnlock.Mode) bool {
	for _, e := range t.entries {
		if e.mgr == mgr && e.cf == cf && e.mode.Covers(mode) && e.atoms&atoms == atoms {
			return true
		}
	}
	return false
}

func (t *refTxn) lock(mgr int, cf txnlock.ColumnFamily, atoms uint64, point bool, mode txnlock.Mode) {
	if point {
		for i, e := range t.entries {
			if e.point && e.mgr == mgr && e.cf == cf && e.atoms == atoms {
				t.entries[i].mode = e.mode.Max(mode)
				return
			}
		}
	}
	t.seq++
	t.entries = append(t.entries, refEntry{mgr: mgr, cf: cf, atoms: atoms, point: point, mode: mode, seq: t.seq})
}

func (t *refTxn) held(mgr int, cf txnlock.ColumnFamily) uint64 {
	var a uint64
	for _, e := range t.entries {
		if e.mgr == mgr && e.cf == cf {
			a |= e.atoms
		}
	}
	return a
}

// unlock removes atoms from every entry, dropping entries left empty.
func (t *refTxn) unlock(mgr int, cf txnlock.ColumnFamily, atoms uint64) {
	kept := t.entries[:0]
	for _, e := range t.entries {
		if e.mgr == mgr && e.cf == cf {
			e.atoms &^= atoms
		}
		if e.atoms != 0 {
			kept = append(kept, e)
		}
	}
	t.entries = kept
}

func (t *refTxn) rollbackTo(seq int) {
	kept := t.entries[:0]
	for _, e := range t.entries {
		if e.seq <= seq {
			kept = append(kept, e)
		}
	}
	t.entries = kept
	t.rollbacks++
}

type refSavepoint struct {
	sp        txnlock.Savepoint
	seq       int
	rollbacks int
}

// TestTxnRecordModel runs random locks, unlocks, savepoints and rollbacks
// on a handle over two fake managers and two column families, against
// the reference, and checks after every step that: a request is sent iff
// the reference does not cover it; the managers hold exactly the atoms
// of the reference's entries, each in at least the strongest mode an
// entry has for it; a rollback changes no mode of what stays held; stale
// savepoints fail.
func TestTxnRecordModel(t *testing.T) {
	const txn = 9
	ctx := context.Background()
	for round := range uint64(30) {
		rng := rand.New(rand.NewPCG(round, 11))
		// The large universe takes mostly points: a record indexes its
		// points past 16.
		u := universe{letters: []int{3, 8, 24}[round%3], points: []int{4, 4, 7}[round%3]}
		mgrs := []*fakeManager{newFakeManager(), newFakeManager()}
		h := txnlock.NewTxn(txn)
		var ref refTxn
		var sps []refSavepoint
		sent := 0
		modes := func() map[string]txnlock.Mode {
			out := map[string]txnlock.Mode{}
			for mi, m := range mgrs {
				for cf := range txnlock.ColumnFamily(2) {
					for i := range u.atoms() {
						if mode := m.modeAt(txn, cf, u.rep(i)); mode != 0 {
							out[fmt.Sprint(mi, cf, i)] = mode
						}
					}
				}
			}
			return out
		}
		for op := range 400 {
			where := fmt.Sprintf("round %d op %d", round, op)
			mi, cf := rng.IntN(2), txnlock.ColumnFamily(rng.IntN(2))
			m := mgrs[mi]
			switch x := rng.IntN(20); {
			case x < 11: // lock
				r := u.randomRange(rng)
				_, point := r.PointKey()
				mode := txnlock.Shared + txnlock.Mode(rng.IntN(2))
				atoms := u.atomsOf(r)
				covered := ref.covers(mi, cf, atoms, mode)
				require.Equal(t, covered, h.Holds(m, cf, r, mode), "%s: Holds %v %v %v", where, cf, r, mode)
				before := m.requests
				req := txnlock.Request{CF: cf, Range: r, Mode: mode}
				if rng.IntN(2) == 0 {
					req.Txn = txn
				}
				require.NoError(t, h.Lock(ctx, m, req), where)
				require.Equal(t, !covered, m.requests > before, "%s: lock %v %v %v sent", where, cf, r, mode)
				if !covered {
					sent++
					ref.lock(mi, cf, atoms, point, mode)
				}
			case x < 14: // unlock: usually something held
				r := u.randomRange(rng)
				if rng.IntN(4) > 0 {
					var held []txnlock.LockRef
					h.Locks(func(hm txnlock.Manager, l txnlock.LockRef) bool {
						if hm == m && l.CF == cf {
							held = append(held, l)
						}
						return true
					})
					if len(held) > 0 {
						r = held[rng.IntN(len(held))].Range
					}
				}
				atoms := u.atomsOf(r)
				err := h.Unlock(m, cf, r)
				if ref.held(mi, cf)&atoms == atoms {
					require.NoError(t, err, "%s: unlock %v %v", where, cf, r)
					ref.unlock(mi, cf, atoms)
				} else {
					require.ErrorIs(t, err, txnlock.ErrNotHeld, "%s: unlock %v %v", where, cf, r)
				}
			case x < 17:
				sps = append(sps, refSavepoint{sp: h.Savepoint(), seq: ref.seq, rollbacks: ref.rollbacks})
			default:
				if len(sps) == 0 {
					continue
				}
				sp := sps[rng.IntN(len(sps))]
				before := modes()
				err := h.RollbackTo(sp.sp)
				if sp.rollbacks != ref.rollbacks {
					require.ErrorIs(t, err, txnlock.ErrInvalidSavepoint, where)
					var le *txnlock.LockError
					require.ErrorAs(t, err, &le)
					require.Equal(t, "rollback to savepoint", le.Op)
					continue
				}
				require.NoError(t, err, where)
				ref.rollbackTo(sp.seq)
				for k, mode := range modes() {
					require.Equal(t, before[k], mode, "%s: rollback changed the mode of %s", where, k)
				}
			}
			require.Equal(t, sent, h.Requests(), where)
			for mi, m := range mgrs {
				for cf := range txnlock.ColumnFamily(2) {
					var got uint64
					want := map[int]txnlock.Mode{}
					for _, e := range ref.entries {
						if e.mgr != mi || e.cf != cf {
							continue
						}
						for a := e.atoms; a != 0; a &= a - 1 {
							i := bits.TrailingZeros64(a)
							want[i] = want[i].Max(e.mode)
						}
					}
					for i := range u.atoms() {
						mode := m.modeAt(txn, cf, u.rep(i))
						if mode != 0 {
							got |= 1 << i
						}
						require.True(t, mode.Covers(want[i]), "%s: mgr %d %v atom %d held %v, an entry says %v", where, mi, cf, i, mode, want[i])
					}
					require.Equal(t, ref.held(mi, cf), got, "%s: mgr %d %v: atoms held", where, mi, cf)
				}
			}
		}
		require.NoError(t, h.Release())
		require.NoError(t, h.Release(), "a second Release is a no-op")
		for _, m := range mgrs {
			for _, tr := range m.trees {
				require.Zero(t, tr.Len(), "round %d: Release left locks", round)
			}
		}
		err := h.Lock(ctx, mgrs[0], txnlock.Request{Range: txnlock.Point([]byte("a")), Mode: txnlock.Shared})
		require.ErrorIs(t, err, txnlock.ErrTxnReleased)
	}
}
