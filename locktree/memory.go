package locktree

import "unsafe"

// Memory accounting. Memory() is the sum of the estimates below, kept up to
// date as segments and transactions come and go. The figures follow the Go
// allocator: every allocation is rounded up to its size class. The one
// estimate is the B-tree's share per segment (google/btree hides its nodes):
// an 8-byte pointer slot in a node that is between half and fully used, plus
// the node headers, which comes to about 16 bytes per item at degree 32.
// TestMemoryAccounting checks the total against runtime.MemStats.
const (
	segBytes       = int64(unsafe.Sizeof(seg{}))
	memberBytes    = int64(unsafe.Sizeof(member{}))
	btreeSlotBytes = 16
	// txnStateBytes: the txnState struct and its map entry (key, value
	// pointer and control byte at the map's load factor).
	txnStateBytes = int64(unsafe.Sizeof(txnState{})) + 32
	// treeBytes: the Tree struct, the B-tree root and the map header.
	treeBytes = int64(unsafe.Sizeof(Tree{})) + 256
)

// sizeClass rounds an allocation of n bytes up to the Go allocator's size
// class (exact up to 1 KiB, within 12.5% above). Allocations below 16 bytes
// without pointers share 16-byte blocks, so they count 8-byte aligned.
func sizeClass(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n < 16:
		return (n + 7) &^ 7
	case n <= 256:
		return (n + 15) &^ 15
	case n <= 512:
		return (n + 31) &^ 31
	case n <= 1024:
		return (n + 63) &^ 63
	}
	// Above 1 KiB the classes are at most 1/8 apart.
	step := int64(128)
	for step*16 < n {
		step *= 2
	}
	return (n + step - 1) / step * step
}

// bytes is what segment s costs: the struct, its key bytes if they do not
// fit inline, its extra owners, and its slot in the B-tree. The slots in the
// owners' segment lists are counted with the lists (txnState.bytes).
func (s *seg) bytes() int64 {
	n := sizeClass(segBytes) + btreeSlotBytes
	if s.keysOutside() {
		n += sizeClass(int64(len(s.keys)))
	}
	n += sizeClass(int64(s.nmore) * memberBytes)
	return n
}

// bytes is what a transaction's index costs.
func (st *txnState) bytes() int64 {
	return txnStateBytes + sizeClass(int64(cap(st.segs))*8)
}
