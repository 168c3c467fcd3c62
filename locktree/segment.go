package locktree

import (
	"strings"
	"unsafe"

	"github.com/txnlock/txnlock"
)

// pos is a position in the key order, the package's compact mirror of
// txnlock.Bound: just before key, just after key, or +∞. Positions built from
// canonical Bounds are canonical, so equal positions are equal field by field.
type pos struct {
	key   string
	after bool // just after key; otherwise just before it
	inf   bool // +∞; key and after are unused
}

// cmp orders two positions: -1, 0 or +1.
func (p pos) cmp(q pos) int {
	switch {
	case p.inf && q.inf:
		return 0
	case p.inf:
		return 1
	case q.inf:
		return -1
	}
	if c := strings.Compare(p.key, q.key); c != 0 {
		return c
	}
	switch {
	case p.after == q.after:
		return 0
	case p.after:
		return 1
	}
	return -1
}

func maxPos(p, q pos) pos {
	if p.cmp(q) >= 0 {
		return p
	}
	return q
}

func minPos(p, q pos) pos {
	if p.cmp(q) <= 0 {
		return p
	}
	return q
}

// view returns a string that shares b's memory. It is used for positions
// that live only during one call (the caller may not change its keys during
// the call); anything the tree keeps is copied by setBounds.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// posOf views a caller's bound as a position, without copying its key.
func posOf(b txnlock.Bound) pos {
	if b.IsPosInf() {
		return pos{inf: true}
	}
	return pos{key: view(b.Key()), after: b.IsAfter()}
}

// bound returns p as a txnlock.Bound over key bytes kb (a copy of p.key).
func (p pos) bound(kb []byte) txnlock.Bound {
	switch {
	case p.inf:
		return txnlock.PosInf()
	case p.after:
		return txnlock.BoundAfter(kb)
	}
	return txnlock.BoundBefore(kb)
}

// rangeOf returns [start, end) as a txnlock.Range over fresh copies of the
// keys, so that a caller may keep it; a point shares one copy between its ends.
func rangeOf(start, end pos) txnlock.Range {
	sb := []byte(start.key)
	eb := sb
	if !end.inf && end.key != start.key {
		eb = []byte(end.key)
	}
	r, err := txnlock.NewRange(start.bound(sb), end.bound(eb))
	if err != nil {
		panic("locktree: internal error: empty segment " + err.Error())
	}
	return r
}

// member is one owner of a segment: a transaction and its mode there. idx
// is the segment's index in that transaction's segment list (txnState.segs).
type member struct {
	txn  txnlock.TxnID
	idx  int32
	mode txnlock.Mode
}

// Segment flags.
const (
	fStartAfter uint8 = 1 << iota // start is just after the start key
	fEndAfter                     // end is just after the end key
	fEndInf                       // end is +∞
	fEndSame                      // the end key is the start key (stored once)
)

// seg is a maximal run of key positions [start, end) with one owner set.
// Segments in the tree are disjoint, non-empty, and two segments that touch
// have different owner sets (see doc.go). The layout is compact because a
// held point range costs one segment: 64 bytes, one allocation, one cache
// line, when its key has at most 16 bytes.
type seg struct {
	// keys holds the start key, then the end key unless fEndSame or fEndInf.
	// Up to inlineKeyBytes it points into inline, in the segment itself, so
	// the B-tree's comparisons read one cache line per segment; longer keys
	// have an allocation of their own. A seg is never copied by value.
	keys   string
	owner  txnlock.TxnID // the first member (smallest TxnID)
	more   *member       // the other members, sorted by TxnID: an array of nmore
	split  uint32        // len(start key)
	idx    int32         // the segment's index in owner's segment list
	nmore  uint32        // len of the more array; 0 if one owner
	flags  uint8
	mode   txnlock.Mode // owner's mode
	inline [inlineKeyBytes]byte
}

// inlineKeyBytes is the key space inside a segment: a point range with a
// key of up to 16 bytes needs no second allocation.
const inlineKeyBytes = 16

func (s *seg) start() pos {
	return pos{key: s.keys[:s.split], after: s.flags&fStartAfter != 0}
}

func (s *seg) end() pos {
	switch {
	case s.flags&fEndInf != 0:
		return pos{inf: true}
	case s.flags&fEndSame != 0:
		return pos{key: s.keys[:s.split], after: s.flags&fEndAfter != 0}
	}
	return pos{key: s.keys[s.split:], after: s.flags&fEndAfter != 0}
}

// setBounds stores copies of start and end's keys in s.
func (s *seg) setBounds(start, end pos) {
	s.flags = 0
	if start.after {
		s.flags |= fStartAfter
	}
	if end.after {
		s.flags |= fEndAfter
	}
	k1, k2 := start.key, end.key
	switch {
	case end.inf:
		s.flags |= fEndInf
		k2 = ""
	case end.key == start.key:
		s.flags |= fEndSame
		k2 = ""
	}
	s.split = uint32(len(k1))
	switch n := len(k1) + len(k2); {
	case n == 0:
		s.keys = ""
	case n <= inlineKeyBytes:
		copy(s.inline[copy(s.inline[:], k1):], k2)
		s.keys = unsafe.String(&s.inline[0], n)
	default:
		var b strings.Builder
		b.Grow(n)
		b.WriteString(k1)
		b.WriteString(k2)
		s.keys = b.String()
	}
}

// keysOutside reports whether the keys have an allocation of their own.
func (s *seg) keysOutside() bool { return len(s.keys) > inlineKeyBytes }

// setProbe makes s a search key whose end is p, viewing p's key (no
// copy). A probe is never inserted into the tree.
func (s *seg) setProbe(p pos) {
	s.keys = p.key
	s.split = uint32(len(p.key))
	s.flags = fEndSame
	switch {
	case p.inf:
		s.flags = fEndInf
	case p.after:
		s.flags |= fEndAfter
	}
}

// extra returns the members after the first (nil if one owner). They are
// kept as a bare array, pointer and length, to save a slice header per
// shared segment.
func (s *seg) extra() []member {
	if s.nmore == 0 {
		return nil
	}
	return unsafe.Slice(s.more, s.nmore)
}

// nmembers is the number of owners.
func (s *seg) nmembers() int {
	return 1 + int(s.nmore)
}

// memberAt returns a pointer to the i-th member's idx and its txn and mode.
func (s *seg) memberAt(i int) (txnlock.TxnID, txnlock.Mode, *int32) {
	if i == 0 {
		return s.owner, s.mode, &s.idx
	}
	m := &s.extra()[i-1]
	return m.txn, m.mode, &m.idx
}

// appendMembers appends s's owners, sorted by TxnID, to buf.
func (s *seg) appendMembers(buf []member) []member {
	buf = append(buf, member{txn: s.owner, idx: s.idx, mode: s.mode})
	buf = append(buf, s.extra()...)
	return buf
}

// modeOf returns txn's mode in s, or 0 if txn is not an owner.
func (s *seg) modeOf(txn txnlock.TxnID) txnlock.Mode {
	if s.owner == txn {
		return s.mode
	}
	for _, m := range s.extra() {
		if m.txn == txn {
			return m.mode
		}
	}
	return 0
}

// idxOf returns a pointer to the index of s in txn's segment list.
func (s *seg) idxOf(txn txnlock.TxnID) *int32 {
	if s.owner == txn {
		return &s.idx
	}
	for i, more := 0, s.extra(); i < len(more); i++ {
		if m := &more[i]; m.txn == txn {
			return &m.idx
		}
	}
	panic("locktree: internal error: segment does not list its owner")
}

// setMembers stores ms (sorted by TxnID, non-empty) as s's owners.
func (s *seg) setMembers(ms []member) {
	s.owner, s.mode, s.idx = ms[0].txn, ms[0].mode, ms[0].idx
	s.more, s.nmore = nil, 0
	if len(ms) > 1 {
		more := append([]member(nil), ms[1:]...)
		s.more, s.nmore = &more[0], uint32(len(more))
	}
}

// sameMembers reports whether s's owners and modes are exactly ms.
func (s *seg) sameMembers(ms []member) bool {
	if len(ms) != s.nmembers() || ms[0].txn != s.owner || ms[0].mode != s.mode {
		return false
	}
	for i, m := range ms[1:] {
		o := s.extra()[i]
		if o.txn != m.txn || o.mode != m.mode {
			return false
		}
	}
	return true
}

func sameMemberList(a, b []member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].txn != b[i].txn || a[i].mode != b[i].mode {
			return false
		}
	}
	return true
}

// lessSeg orders segments (and probes) by end position. Segments are
// disjoint, so this is also their order by start; keying the B-tree by end
// finds the first segment that reaches past a position in one descent.
func lessSeg(a, b *seg) bool {
	return a.end().cmp(b.end()) < 0
}
