package locktree

import (
	"math/rand/v2"
	"testing"

	"github.com/txnlock/txnlock"
)

// listLocks is the brute-force alternative to the tree, for scale: every
// held (txn, range, mode) in a slice, every query a full scan.
type listLocks []struct {
	txn  txnlock.TxnID
	r    txnlock.Range
	mode txnlock.Mode
}

func (l listLocks) conflicts(txn txnlock.TxnID, r txnlock.Range, mode txnlock.Mode, fn func(txnlock.TxnID, txnlock.Range, txnlock.Mode) bool) {
	for _, x := range l {
		if x.txn != txn && !mode.Compatible(x.mode) && x.r.Overlaps(r) {
			if !fn(x.txn, x.r, x.mode) {
				return
			}
		}
	}
}

// benchKey is a 16-byte key for i.
func benchKey(i uint64) []byte { return key16(nil, i) }

func benchRange(i, n uint64) txnlock.Range {
	if n <= 1 {
		return txnlock.Point(benchKey(i))
	}
	r, err := txnlock.HalfOpen(benchKey(i), benchKey(i+n))
	if err != nil {
		panic(err)
	}
	return r
}

// heldTree holds n locks of 100 transactions over the even keys of
// [0, 20n): 70% Exclusive points, 30% Shared ranges of up to 16 keys that
// may overlap each other. It returns the tree and the same locks as a list.
func heldTree(n int) (*Tree, listLocks) {
	rng := rand.New(rand.NewPCG(7, 8))
	tr := New()
	var list listLocks
	for len(list) < n {
		txn := txnlock.TxnID(1 + rng.IntN(100))
		x := uint64(rng.IntN(10*n)) * 2
		r, mode := benchRange(x, 1), txnlock.Exclusive
		if rng.IntN(10) < 3 {
			r, mode = benchRange(x, 1+uint64(rng.IntN(16))), txnlock.Shared
		}
		if tr.HasConflict(txn, r, mode) || tr.Covered(txn, r, mode) {
			continue
		}
		tr.Acquire(txn, r, mode)
		list = append(list, struct {
			txn  txnlock.TxnID
			r    txnlock.Range
			mode txnlock.Mode
		}{txn, r, mode})
	}
	return tr, list
}

// BenchmarkConflicts: the conflict check of a request for 1 to 16 keys
// against 10,000 held ranges, in the tree and in a brute-force list.
func BenchmarkConflicts(b *testing.B) {
	const n = 10_000
	tr, list := heldTree(n)
	rng := rand.New(rand.NewPCG(9, 10))
	type query struct {
		txn  txnlock.TxnID
		r    txnlock.Range
		mode txnlock.Mode
	}
	qs := make([]query, 1024)
	for i := range qs {
		mode := txnlock.Exclusive
		if i%2 == 0 {
			mode = txnlock.Shared
		}
		qs[i] = query{txnlock.TxnID(1 + rng.IntN(100)), benchRange(uint64(rng.IntN(20*n)), 1+uint64(rng.IntN(16))), mode}
	}
	found := 0
	count := func(txnlock.TxnID, txnlock.Range, txnlock.Mode) bool { found++; return true }
	b.Run("tree/Conflicts", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			q := qs[i%len(qs)]
			tr.Conflicts(q.txn, q.r, q.mode, count)
		}
	})
	b.Run("tree/HasConflict", func(b *testing.B) {
		for i := range b.N {
			q := qs[i%len(qs)]
			if tr.HasConflict(q.txn, q.r, q.mode) {
				found++
			}
		}
	})
	b.Run("list/Conflicts", func(b *testing.B) {
		for i := range b.N {
			q := qs[i%len(qs)]
			list.conflicts(q.txn, q.r, q.mode, count)
		}
	})
	_ = found
}

// BenchmarkAcquireRelease: a point lock on a fresh key, then its release,
// in an empty tree and next to 10,000 held ranges. "checked" adds what a
// manager does first: HasConflict and Covered.
func BenchmarkAcquireRelease(b *testing.B) {
	keys := make([]txnlock.Range, 4096)
	for i := range keys {
		keys[i] = benchRange(1<<40+uint64(i)*97, 1) // beyond the held keys
	}
	for _, held := range []int{0, 10_000} {
		tr, _ := heldTree(held)
		name := "empty"
		if held > 0 {
			name = "10000-held"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				r := keys[i%len(keys)]
				tr.Acquire(1000, r, txnlock.Exclusive)
				if err := tr.Release(1000, r, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/checked", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				r := keys[i%len(keys)]
				if tr.HasConflict(1000, r, txnlock.Exclusive) || tr.Covered(1000, r, txnlock.Exclusive) {
					b.Fatal("fresh key conflicts")
				}
				tr.Acquire(1000, r, txnlock.Exclusive)
				if err := tr.Release(1000, r, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReleaseAll: a transaction takes 100 point locks, then releases
// them all, next to 10,000 held ranges.
func BenchmarkReleaseAll(b *testing.B) {
	tr, _ := heldTree(10_000)
	keys := make([]txnlock.Range, 100)
	for i := range keys {
		keys[i] = benchRange(1<<40+uint64(i)*401, 1)
	}
	b.ReportAllocs()
	for range b.N {
		for _, r := range keys {
			tr.Acquire(1000, r, txnlock.Exclusive)
		}
		tr.ReleaseAll(1000, nil)
	}
}
