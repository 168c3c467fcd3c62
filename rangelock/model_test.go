package rangelock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/txnlock/txnlock"
)

// A brute-force reference for single-threaded sequences of NoWait lock
// requests, unlocks and unlock-alls: each transaction's holdings as sorted
// lists of disjoint ranges per mode. The manager must agree on every
// outcome and, after every operation, on the Status view.

type modelTxn struct{ xs, ss []txnlock.Range }

type lockModel map[txnlock.ColumnFamily]map[txnlock.TxnID]*modelTxn

func (m lockModel) txn(cf txnlock.ColumnFamily, t txnlock.TxnID) *modelTxn {
	if m[cf] == nil {
		m[cf] = map[txnlock.TxnID]*modelTxn{}
	}
	if m[cf][t] == nil {
		m[cf][t] = &modelTxn{}
	}
	return m[cf][t]
}

func (m lockModel) conflicts(cf txnlock.ColumnFamily, t txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) bool {
	for o, h := range m[cf] {
		if o == t {
			continue
		}
		for _, x := range h.xs {
			if x.Overlaps(r) {
				return true
			}
		}
		if mode == txnlock.Exclusive {
			for _, s := range h.ss {
				if s.Overlaps(r) {
					return true
				}
			}
		}
	}
	return false
}

func (m lockModel) lock(cf txnlock.ColumnFamily, t txnlock.TxnID, r txnlock.Range, mode txnlock.Mode) {
	h := m.txn(cf, t)
	if mode == txnlock.Exclusive {
		h.xs = mergeRanges(append(h.xs, r))
		h.ss = subtractRanges(h.ss, []txnlock.Range{r})
		return
	}
	h.ss = mergeRanges(append(h.ss, subtractRanges([]txnlock.Range{r}, h.xs)...))
}

func (m lockModel) unlock(cf txnlock.ColumnFamily, t txnlock.TxnID, r txnlock.Range) bool {
	h := m.txn(cf, t)
	if !coversAll(slices.Concat(h.xs, h.ss), r) {
		return false
	}
	h.xs = subtractRanges(h.xs, []txnlock.Range{r})
	h.ss = subtractRanges(h.ss, []txnlock.Range{r})
	return true
}

func (m lockModel) status() string {
	var st txnlock.Status
	for _, cf := range slices.Sorted(mapKeys(m)) {
		var hs []holding
		for _, t := range slices.Sorted(mapKeys(m[cf])) {
			for _, r := range m[cf][t].xs {
				hs = append(hs, holding{t, r, txnlock.Exclusive})
			}
			for _, r := range m[cf][t].ss {
				hs = append(hs, holding{t, r, txnlock.Shared})
			}
		}
		st.Locks = append(st.Locks, sweep(cf, hs)...)
	}
	st.Sort()
	return st.String()
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// modelKeys are chosen to make neighbours: a key and its successor
// (k\x00), prefixes of each other, and the empty key.
var modelKeys = []string{"", "a", "a\x00", "ab", "ab\x00", "b", "ba", "c", "c\x00", "d"}

// opReader turns fuzz bytes (or random numbers) into operations.
type opReader struct {
	data []byte
	rng  *rand.Rand
}

func (o *opReader) next(n int) int {
	if o.rng != nil {
		return o.rng.IntN(n)
	}
	if len(o.data) == 0 {
		return 0
	}
	b := o.data[0]
	o.data = o.data[1:]
	return int(b) % n
}

func (o *opReader) done() bool { return o.rng == nil && len(o.data) == 0 }

func (o *opReader) rangeOf() txnlock.Range {
	key := func() []byte { return []byte(modelKeys[o.next(len(modelKeys))]) }
	switch o.next(8) {
	case 0, 1, 2:
		return txnlock.Point(key())
	case 3:
		return txnlock.Prefix(key())
	}
	// Either end open, or next to a key.
	end := func(open txnlock.Bound) txnlock.Bound {
		switch o.next(5) {
		case 0:
			return open
		case 1, 2:
			return txnlock.BoundAfter(key())
		}
		return txnlock.BoundBefore(key())
	}
	r, err := txnlock.NewRange(end(txnlock.NegInf()), end(txnlock.PosInf()))
	if err != nil {
		return txnlock.Point(key())
	}
	return r
}

// runModel applies ops from o to a fresh manager and to the model, and
// returns the first disagreement.
func runModel(o *opReader, nops int) error {
	opts := Options{Stripes: 1 << o.next(3), fixedHash: true}
	m, err := New(opts)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.AddColumnFamily(1); err != nil {
		return err
	}
	model := lockModel{}
	ctx := context.Background()
	var trace strings.Builder
	for i := 0; i < nops && !(i > 0 && o.done()); i++ {
		cf := txnlock.ColumnFamily(o.next(2))
		txn := txnlock.TxnID(1 + o.next(4))
		switch op := o.next(10); {
		case op < 6:
			r, mode := o.rangeOf(), txnlock.Mode(1+o.next(2))
			fmt.Fprintf(&trace, "lock %s %s %v %v\n", txn, cf, r, mode)
			req := txnlock.Request{Txn: txn, CF: cf, Range: r, Mode: mode, Timeout: txnlock.NoWait}
			err := m.Lock(ctx, req)
			want := !model.conflicts(cf, txn, r, mode)
			if (err == nil) != want || (err != nil && !errors.Is(err, txnlock.ErrLockNoWait)) {
				return fmt.Errorf("%s: got %v, want success=%t", trace.String(), err, want)
			}
			if want {
				model.lock(cf, txn, r, mode)
			}
		case op < 9:
			r := o.rangeOf()
			fmt.Fprintf(&trace, "unlock %s %s %v\n", txn, cf, r)
			err := m.Unlock(txn, cf, r)
			want := model.unlock(cf, txn, r)
			if (err == nil) != want || (err != nil && !errors.Is(err, txnlock.ErrNotHeld)) {
				return fmt.Errorf("%s: got %v, want success=%t", trace.String(), err, want)
			}
		default:
			fmt.Fprintf(&trace, "unlock-all %s\n", txn)
			if err := m.UnlockAll(txn); err != nil {
				return err
			}
			for _, byTxn := range model {
				delete(byTxn, txn)
			}
		}
		if err := m.checkInvariants(); err != nil {
			return fmt.Errorf("%s: %w", trace.String(), err)
		}
		if got, want := m.Status().String(), model.status(); got != want {
			return fmt.Errorf("%s: status\n%s\nwant\n%s", trace.String(), got, want)
		}
	}
	return nil
}

// TestModel runs random sequences against the brute-force model.
func TestModel(t *testing.T) {
	seqs := 300
	if *long {
		seqs = 30000
	}
	for seed := range seqs {
		o := &opReader{rng: rand.New(rand.NewPCG(uint64(seed), 7))}
		if err := runModel(o, 60); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// FuzzModel: the same with operations from fuzz input.
func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 5, 3, 1, 1, 0, 7, 2, 0})
	f.Add([]byte{1, 2, 1, 3, 4, 1, 1, 0, 6, 2, 2, 0, 1, 8, 6, 4, 1, 0, 0, 9, 9})
	f.Add([]byte("the quick brown fox jumps over the lazy dog"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runModel(&opReader{data: data}, 200); err != nil {
			t.Fatal(err)
		}
	})
}
