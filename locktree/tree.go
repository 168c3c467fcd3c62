package locktree

import (
	"github.com/google/btree"
	"github.com/txnlock/txnlock"
)

// Tree is a set of held range locks: which transaction holds which keys in
// which mode. See the package documentation for the layout.
//
// A Tree is not safe for concurrent use, not even for concurrent reads (the
// read methods reuse scratch buffers): the caller's mutex guards every call.
// Callbacks run while the caller holds that mutex and must not call back
// into the Tree.
type Tree struct {
	segs   *btree.BTreeG[*seg]         // disjoint segments, by end (= by start)
	txns   map[txnlock.TxnID]*txnState // each holder's segments
	npiece int                         // Σ txnState.pieces
	mem    int64                       // Memory()
	probe  seg                         // search key for segs
	old    []*seg                      // rewrite scratch: segments replaced
	pieces []piece                     // rewrite scratch: segments to be
	mbuf   []member                    // rewrite scratch: pieces' owners
	runs   []run                       // walkRuns scratch
	held   []held                      // Holds/Escalate scratch
	sorted []*seg                      // Holds scratch
	ids    []txnlock.TxnID             // Escalate scratch
	spare  []*txnState                 // emptied indexes for reuse
}

// txnState indexes one transaction's segments, so that what it holds is
// found without a scan (ReleaseAll, Holds, TxnCount). segs is unordered; a
// segment's member entry for the transaction stores its index here.
type txnState struct {
	segs   []*seg
	pieces int // the number of ranges the transaction holds (TxnCount)
}

// btreeDegree: nodes of 31 to 63 segment pointers.
const btreeDegree = 32

// New returns an empty tree.
func New() *Tree {
	return &Tree{
		segs: btree.NewG(btreeDegree, lessSeg),
		txns: make(map[txnlock.TxnID]*txnState),
		mem:  treeBytes,
	}
}

// Len is the number of held (transaction, range) entries: the sum over
// transactions of TxnCount.
func (t *Tree) Len() int { return t.npiece }

// TxnCount is the number of ranges txn holds: its holdings as Holds reports
// them, where touching ranges of one mode count once.
func (t *Tree) TxnCount(txn txnlock.TxnID) int {
	if st := t.txns[txn]; st != nil {
		return st.pieces
	}
	return 0
}

// segments is the number of segments: disjoint runs of keys with one owner
// set (see the package documentation). It is at most 2*Len()-1.
func (t *Tree) segments() int { return t.segs.Len() }

// Memory is the number of bytes the tree accounts for its locks: segments,
// key copies, owner lists, B-tree slots and per-transaction indexes.
func (t *Tree) Memory() int64 { return t.mem }

// insert adds a new segment to the B-tree and to its owners' lists.
func (t *Tree) insert(s *seg) {
	if _, dup := t.segs.ReplaceOrInsert(s); dup {
		panic("locktree: internal error: two segments end at one position")
	}
	t.mem += s.bytes()
	for i, n := 0, s.nmembers(); i < n; i++ {
		txn, _, idx := s.memberAt(i)
		st := t.txns[txn]
		if st == nil {
			st = t.newTxnState()
			t.txns[txn] = st
			t.mem += st.bytes()
		}
		t.mem -= sizeClass(int64(cap(st.segs)) * 8)
		*idx = int32(len(st.segs))
		st.segs = append(st.segs, s)
		t.mem += sizeClass(int64(cap(st.segs)) * 8)
	}
}

// remove takes a segment out of the B-tree and its owners' lists. A
// transaction left with no segment is forgotten by addPieces, once its
// range count is settled.
func (t *Tree) remove(s *seg) {
	if _, ok := t.segs.Delete(s); !ok {
		panic("locktree: internal error: removing a segment that is not in the tree")
	}
	t.mem -= s.bytes()
	for i, n := 0, s.nmembers(); i < n; i++ {
		txn, _, idx := s.memberAt(i)
		st := t.txns[txn]
		last := len(st.segs) - 1
		if moved := st.segs[last]; int(*idx) != last {
			st.segs[*idx] = moved
			*moved.idxOf(txn) = *idx
		}
		st.segs[last] = nil
		st.segs = st.segs[:last]
	}
}

// addPieces changes txn's piece count by d and forgets the transaction if
// it holds nothing.
func (t *Tree) addPieces(txn txnlock.TxnID, d int) {
	st := t.txns[txn]
	if st == nil {
		if d != 0 {
			panic("locktree: internal error: piece count of an unknown transaction")
		}
		return
	}
	st.pieces += d
	t.npiece += d
	if len(st.segs) == 0 {
		if st.pieces != 0 {
			panic("locktree: internal error: pieces without segments")
		}
		t.mem -= st.bytes()
		delete(t.txns, txn)
		if len(t.spare) < maxSpare && cap(st.segs) <= maxSpareSegs {
			st.segs = st.segs[:0]
			t.spare = append(t.spare, st)
		}
	}
}

// Emptied transaction indexes are kept for reuse, so that a transaction
// that takes and releases a few locks allocates no index. The spares are
// not counted in Memory (at most maxSpare*(56+8*maxSpareSegs) bytes).
const (
	maxSpare     = 16
	maxSpareSegs = 16
)

func (t *Tree) newTxnState() *txnState {
	if n := len(t.spare); n > 0 {
		st := t.spare[n-1]
		t.spare[n-1] = nil
		t.spare = t.spare[:n-1]
		return st
	}
	return &txnState{}
}

// ascendFrom calls fn for each segment that ends at or after p, in key
// order, until fn returns false. It is the one way into the B-tree: a
// single descent to p, then a walk.
func (t *Tree) ascendFrom(p pos, fn func(s *seg) bool) {
	t.probe.setProbe(p)
	t.segs.AscendGreaterOrEqual(&t.probe, fn)
	t.probe.keys = "" // do not keep the caller's key alive
}

// overlapping calls fn for each segment that overlaps [lo, hi), in key
// order, until fn returns false: the segments from the first that ends
// after lo to the last that starts before hi.
func (t *Tree) overlapping(lo, hi pos, fn func(s *seg) bool) {
	t.ascendFrom(lo, func(s *seg) bool {
		if s.end().cmp(lo) == 0 {
			return true // touches lo from the left
		}
		if s.start().cmp(hi) >= 0 {
			return false
		}
		return fn(s)
	})
}

// piece is a segment being built by rewrite.
type piece struct {
	start, end pos
	m0, m1     int  // owners: mbuf[m0:m1], sorted by TxnID
	keep       *seg // an old segment identical to this piece, kept as is
}

// rewrite is the one primitive that changes the tree. It sets txn's mode on
// every key of [lo, hi) to f(its current mode, 0 if none), leaving other
// owners alone, and restores the segment invariants: segments split at lo
// and hi, empty ones dropped, touching ones with equal owner sets merged.
// Segments that come out identical are left in place.
//
// If need is not 0, txn must already hold every key of [lo, hi) in need or
// a stronger mode; otherwise rewrite changes nothing and returns false.
//
// Cost: O(log n + segments touching [lo, hi), times their owners).
func (t *Tree) rewrite(txn txnlock.TxnID, lo, hi pos, need txnlock.Mode, f func(txnlock.Mode) txnlock.Mode) bool {
	// The old segments: from the first that ends at or after lo (it may
	// touch lo and merge) to the one that starts at hi (it may merge).
	old := t.old[:0]
	t.ascendFrom(lo, func(s *seg) bool {
		c := s.start().cmp(hi)
		if c > 0 {
			return false
		}
		old = append(old, s)
		return c < 0
	})
	if need != 0 && !covers(old, txn, lo, hi, need) {
		t.old = scratch(old)
		return false
	}
	if t.rewriteFast(txn, lo, hi, old, f) {
		t.old = scratch(old)
		return true
	}
	var st starts
	for _, s := range old {
		st.add(s.start(), s.end(), s.modeOf(txn), lo, hi)
	}
	before := st.n

	// The new segments over the same extent.
	ps := t.pieces[:0]
	mbuf := t.mbuf[:0]
	p, stop := lo, hi
	if len(old) > 0 {
		p = minPos(p, old[0].start())
		stop = maxPos(stop, old[len(old)-1].end())
	}
	for i := 0; p.cmp(stop) < 0; {
		for i < len(old) && old[i].end().cmp(p) <= 0 {
			i++
		}
		var cur *seg
		q := stop
		if i < len(old) {
			if old[i].start().cmp(p) <= 0 {
				cur, q = old[i], old[i].end()
			} else {
				q = old[i].start()
			}
		}
		if p.cmp(lo) < 0 && lo.cmp(q) < 0 {
			q = lo
		}
		if p.cmp(hi) < 0 && hi.cmp(q) < 0 {
			q = hi
		}
		m0 := len(mbuf)
		if cur != nil {
			mbuf = cur.appendMembers(mbuf)
		}
		if lo.cmp(p) <= 0 && q.cmp(hi) <= 0 {
			mbuf = setMode(mbuf, m0, txn, f)
		}
		switch last := len(ps) - 1; {
		case len(mbuf) == m0:
			// No owner: a gap.
		case last >= 0 && ps[last].end.cmp(p) == 0 && sameMemberList(mbuf[ps[last].m0:ps[last].m1], mbuf[m0:]):
			ps[last].end = q
			mbuf = mbuf[:m0]
		default:
			ps = append(ps, piece{start: p, end: q, m0: m0, m1: len(mbuf)})
		}
		p = q
	}
	st = starts{}
	for _, pc := range ps {
		st.add(pc.start, pc.end, modeIn(mbuf[pc.m0:pc.m1], txn), lo, hi)
	}
	after := st.n

	// Keep the old segments that come out unchanged.
	kept := 0
	for i, j := 0, 0; i < len(ps) && j < len(old); {
		pc, s := &ps[i], old[j]
		switch c := pc.start.cmp(s.start()); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if pc.end.cmp(s.end()) == 0 && s.sameMembers(mbuf[pc.m0:pc.m1]) {
				pc.keep = s
				old[j] = nil
				kept++
			}
			i++
			j++
		}
	}
	if kept < len(ps) || kept < len(old) {
		for _, s := range old {
			if s != nil {
				t.remove(s)
			}
		}
		for j := range ps {
			if ps[j].keep == nil {
				s := &seg{}
				s.setBounds(ps[j].start, ps[j].end)
				s.setMembers(mbuf[ps[j].m0:ps[j].m1])
				t.insert(s)
			}
		}
		t.addPieces(txn, after-before)
	}
	t.old, t.pieces, t.mbuf = scratch(old), scratch(ps), scratch(mbuf)
	return true
}

// maxScratch bounds the scratch slices a Tree keeps between calls, so that
// one huge call does not pin memory that Memory() does not count.
const maxScratch = 1024

// scratch returns s emptied (and cleared, so that it pins no segment) for
// reuse, or nil if it has grown past maxScratch.
func scratch[T any](s []T) []T {
	if cap(s) > maxScratch {
		return nil
	}
	clear(s)
	return s[:0]
}

// rewriteFast handles the two commonest rewrites without building pieces:
// a lock on keys nobody holds or touches (a new segment, a new range), and
// the release of a range that is a segment of its own (nothing touches it,
// txn its only owner). It reports whether it did the rewrite.
func (t *Tree) rewriteFast(txn txnlock.TxnID, lo, hi pos, old []*seg, f func(txnlock.Mode) txnlock.Mode) bool {
	switch len(old) {
	case 0:
		m := f(0)
		if m == 0 {
			return true
		}
		s := &seg{owner: txn, mode: m}
		s.setBounds(lo, hi)
		t.insert(s)
		t.addPieces(txn, 1)
		return true
	case 1:
		s := old[0]
		if s.nmore != 0 || s.owner != txn || s.start().cmp(lo) != 0 || s.end().cmp(hi) != 0 || f(s.mode) != 0 {
			return false
		}
		t.remove(s)
		t.addPieces(txn, -1)
		return true
	}
	return false
}

// covers reports whether segments, sorted, hold every key of [lo, hi) for
// txn in need or a stronger mode.
func covers(segs []*seg, txn txnlock.TxnID, lo, hi pos, need txnlock.Mode) bool {
	next := lo // the first position not yet known to be covered
	for _, s := range segs {
		if next.cmp(hi) >= 0 {
			break
		}
		if s.end().cmp(next) <= 0 {
			continue
		}
		if s.start().cmp(next) > 0 || !s.modeOf(txn).Covers(need) {
			return false
		}
		next = s.end()
	}
	return next.cmp(hi) >= 0
}

// starts counts the positions in [lo, hi] where a transaction's holding
// starts a range (as TxnCount counts them): positions where it holds the
// key just after in some mode and not the key just before in that mode.
// Fed the segments (or pieces) of a stretch of the tree in key order, it
// sees every boundary in [lo, hi] with both of its sides.
//
// A change to txn's modes on [lo, hi) can move range starts only at
// positions in [lo, hi], so the difference of two counts, before and after,
// is the change in TxnCount.
type starts struct {
	n        int
	prevEnd  pos
	prevMode txnlock.Mode
	seen     bool
}

func (c *starts) add(start, end pos, m txnlock.Mode, lo, hi pos) {
	if m != 0 && start.cmp(lo) >= 0 && start.cmp(hi) <= 0 {
		if !c.seen || c.prevEnd.cmp(start) != 0 || c.prevMode != m {
			c.n++
		}
	}
	c.prevEnd, c.prevMode, c.seen = end, m, true
}

// setMode sets txn's mode in the sorted owner list mbuf[m0:] to f(old),
// inserting or deleting txn's entry as needed.
func setMode(mbuf []member, m0 int, txn txnlock.TxnID, f func(txnlock.Mode) txnlock.Mode) []member {
	i := m0
	for i < len(mbuf) && mbuf[i].txn < txn {
		i++
	}
	found := i < len(mbuf) && mbuf[i].txn == txn
	var cur txnlock.Mode
	if found {
		cur = mbuf[i].mode
	}
	m := f(cur)
	switch {
	case m == cur:
	case m == 0:
		mbuf = append(mbuf[:i], mbuf[i+1:]...)
	case found:
		mbuf[i].mode = m
	default:
		mbuf = append(mbuf, member{})
		copy(mbuf[i+1:], mbuf[i:])
		mbuf[i] = member{txn: txn, mode: m}
	}
	return mbuf
}

// modeIn returns txn's mode in an owner list, 0 if absent.
func modeIn(ms []member, txn txnlock.TxnID) txnlock.Mode {
	for _, m := range ms {
		if m.txn == txn {
			return m.mode
		}
	}
	return 0
}
