package locktree

import (
	"fmt"
	"slices"

	"github.com/txnlock/txnlock"
)

// checkInvariants verifies the tree's internal structure from scratch and
// returns the first violation:
//   - segments are sorted, disjoint and non-empty; owner lists are sorted,
//     without duplicates, with valid modes;
//   - two touching segments have different owner sets (canonical form);
//   - every membership is in its transaction's list at its index, and the
//     lists hold nothing else; no transaction is listed without segments;
//   - piece counts (TxnCount, Len) match a recount;
//   - Memory matches a recount.
func checkInvariants(t *Tree) error {
	var segs []*seg
	t.segs.Ascend(func(s *seg) bool {
		segs = append(segs, s)
		return true
	})
	mem := treeBytes
	memberships := map[txnlock.TxnID]int{}
	for i, s := range segs {
		if s.start().cmp(s.end()) >= 0 {
			return fmt.Errorf("segment %d is empty: %v", i, rangeOrBounds(s))
		}
		if i > 0 {
			p := segs[i-1]
			switch c := p.end().cmp(s.start()); {
			case c > 0:
				return fmt.Errorf("segments %d and %d overlap", i-1, i)
			case c == 0 && p.sameMembers(s.appendMembers(nil)):
				return fmt.Errorf("touching segments %d %v and %d %v have one owner set", i-1, rangeOrBounds(p), i, rangeOrBounds(s))
			}
		}
		ms := s.appendMembers(nil)
		for j, m := range ms {
			if !m.mode.Valid() || !m.txn.Valid() {
				return fmt.Errorf("segment %d: bad member %+v", i, m)
			}
			if j > 0 && ms[j-1].txn >= m.txn {
				return fmt.Errorf("segment %d: owners not sorted: %+v", i, ms)
			}
			st := t.txns[m.txn]
			if st == nil || int(m.idx) >= len(st.segs) || st.segs[m.idx] != s {
				return fmt.Errorf("segment %d: %v not at its index %d in its list", i, m.txn, m.idx)
			}
			memberships[m.txn]++
		}
		if (s.more == nil) != (s.nmore == 0) {
			return fmt.Errorf("segment %d: extra owner array %p of length %d", i, s.more, s.nmore)
		}
		mem += s.bytes()
	}
	npiece := 0
	for id, st := range t.txns {
		if len(st.segs) == 0 {
			return fmt.Errorf("%v listed with no segment", id)
		}
		if memberships[id] != len(st.segs) {
			return fmt.Errorf("%v lists %d segments, owns %d", id, len(st.segs), memberships[id])
		}
		mem += st.bytes()
		// Recount pieces from the sorted segments.
		own := slices.Clone(st.segs)
		slices.SortFunc(own, func(a, b *seg) int { return a.start().cmp(b.start()) })
		n := 0
		for j, s := range own {
			if j == 0 || own[j-1].end().cmp(s.start()) != 0 || own[j-1].modeOf(id) != s.modeOf(id) {
				n++
			}
		}
		if n != st.pieces {
			return fmt.Errorf("%v: TxnCount %d, recount %d", id, st.pieces, n)
		}
		npiece += n
	}
	if npiece != t.npiece {
		return fmt.Errorf("Len %d, recount %d", t.npiece, npiece)
	}
	if mem != t.mem {
		return fmt.Errorf("Memory %d, recount %d", t.mem, mem)
	}
	return nil
}

func rangeOrBounds(s *seg) string {
	if s.start().cmp(s.end()) >= 0 {
		return fmt.Sprintf("<empty %+v %+v>", s.start(), s.end())
	}
	return rangeOf(s.start(), s.end()).String()
}

// segmentString renders the segments, one per line, with their owners:
// "[a, c) 1:S 2:S".
func segmentString(t *Tree) string {
	var out []byte
	t.segs.Ascend(func(s *seg) bool {
		out = append(out, rangeOf(s.start(), s.end()).String()...)
		for _, m := range s.appendMembers(nil) {
			out = fmt.Appendf(out, " %d:%v", uint64(m.txn), m.mode)
		}
		out = append(out, '\n')
		return true
	})
	return string(out)
}
