package locktree

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// memShape fills a tree with n locks of one shape.
type memShape struct {
	name string
	fill func(t *Tree, n int)
}

// key16 writes a 16-byte key for i into buf: an 8-byte prefix and i.
func key16(buf []byte, i uint64) []byte {
	buf = append(buf[:0], "tbl:idx:"...)
	return binary.BigEndian.AppendUint64(buf, i)
}

var memShapes = []memShape{
	{"points/sequential/1-txn", func(t *Tree, n int) {
		var buf []byte
		for i := 0; i < n; i++ {
			t.Acquire(1, txnlock.Point(key16(buf, uint64(i)*2)), txnlock.Exclusive)
		}
	}},
	{"points/random/100-txns", func(t *Tree, n int) {
		rng := rand.New(rand.NewPCG(1, 2))
		var buf []byte
		for i := 0; i < n; i++ {
			t.Acquire(txnlock.TxnID(1+rng.IntN(100)), txnlock.Point(key16(buf, rng.Uint64())), txnlock.Exclusive)
		}
	}},
	{"ranges/random/100-txns", func(t *Tree, n int) {
		rng := rand.New(rand.NewPCG(3, 4))
		var a, b []byte
		for i := 0; i < n; i++ {
			x := rng.Uint64() &^ 0xff
			r, err := txnlock.HalfOpen(key16(a, x), key16(b, x+1+uint64(rng.IntN(200))))
			if err != nil {
				panic(err)
			}
			t.Acquire(txnlock.TxnID(1+rng.IntN(100)), r, txnlock.Exclusive)
		}
	}},
	{"shared/overlapping/4-owners", func(t *Tree, n int) {
		var a, b []byte
		for i := 0; i < n; i++ {
			x := uint64(i/4) * 16
			r, err := txnlock.Inclusive(key16(a, x+uint64(i%4)), key16(b, x+8+uint64(i%4)))
			if err != nil {
				panic(err)
			}
			t.Acquire(txnlock.TxnID(1+i%4), r, txnlock.Shared)
		}
	}},
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measure builds a tree of n locks of a shape and returns the heap it
// holds (measured) and what it accounts (Memory).
func measure(shape memShape, n int) (measured, accounted int64, tr *Tree) {
	before := heapInUse()
	tr = New()
	shape.fill(tr, n)
	after := heapInUse()
	runtime.KeepAlive(tr)
	return int64(after) - int64(before), tr.Memory(), tr
}

// TestSegmentSize pins the layout the memory figures depend on: a segment
// is one 64-byte size class, keys of up to 16 bytes included.
func TestSegmentSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit layout")
	}
	require.EqualValues(t, 64, unsafe.Sizeof(seg{}))
	require.EqualValues(t, 64, sizeClass(segBytes))
}

// TestMemoryAccounting checks that Memory() is within 25% of the heap a
// tree holds, measured with runtime.MemStats after a collection, for
// 100,000 locks of several shapes (16-byte keys).
func TestMemoryAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100,000 locks per shape")
	}
	const n = 100_000
	for _, shape := range memShapes {
		t.Run(shape.name, func(t *testing.T) {
			measured, accounted, tr := measure(shape, n)
			ratio := float64(accounted) / float64(measured)
			t.Logf("%d locks (%d segments): measured %d B (%.1f B/lock), accounted %d B (%.1f B/lock), accounted/measured %.3f",
				tr.Len(), tr.segments(), measured, float64(measured)/float64(tr.Len()), accounted, float64(accounted)/float64(tr.Len()), ratio)
			require.InDelta(t, 1.0, ratio, 0.25, "Memory() must be within 25%% of the measured heap")
			// Releasing everything returns the accounting to an empty tree's.
			for id := txnlock.TxnID(1); id <= 100; id++ {
				tr.ReleaseAll(id, nil)
			}
			require.Equal(t, New().Memory(), tr.Memory())
			require.Zero(t, tr.Len())
		})
	}
}

// BenchmarkMemoryPerLock reports the measured heap and the accounted
// bytes per held lock for 100,000 locks of each shape.
func BenchmarkMemoryPerLock(b *testing.B) {
	const n = 100_000
	for _, shape := range memShapes {
		b.Run(shape.name, func(b *testing.B) {
			var measured, accounted int64
			var locks int
			for range b.N {
				m, a, tr := measure(shape, n)
				measured, accounted, locks = m, a, tr.Len()
			}
			b.ReportMetric(float64(measured)/float64(locks), "heap-B/lock")
			b.ReportMetric(float64(accounted)/float64(locks), "accounted-B/lock")
			b.ReportMetric(float64(accounted)/float64(measured), "accounted/heap")
		})
	}
}
