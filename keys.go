package txnlock

import (
	"bytes"
	"strings"
	"unsafe"
)

// A Bound is a position in the key order. Positions fall between keys: just
// before a key, just after a key, or +∞ (after every key). −∞ is the position
// just before the empty key, which is the smallest key.
//
// Bounds are canonical: in bytewise order the key right after k is k+"\x00",
// so "just before k+\x00" and "just after k" are one position, and a Bound
// always uses the second spelling. Two bounds at the same position are
// therefore equal field by field, and Compare orders them by position.
type Bound struct {
	key   []byte
	after bool // just after key; otherwise just before it
	inf   bool // +∞; key and after are unused
}

// before returns the position just before k, in canonical form.
func before(k []byte) Bound {
	if n := len(k); n > 0 && k[n-1] == 0 {
		return Bound{key: k[:n-1], after: true}
	}
	return Bound{key: k}
}

// afterKey returns the position just after k.
func afterKey(k []byte) Bound { return Bound{key: k, after: true} }

// BoundBefore returns the position just before key k (canonical: just
// before k+"\x00" is just after k). A nil k is the empty key, so
// BoundBefore(nil) is −∞.
func BoundBefore(k []byte) Bound {
	if k == nil {
		k = []byte{}
	}
	return before(k)
}

// BoundAfter returns the position just after key k.
func BoundAfter(k []byte) Bound {
	if k == nil {
		k = []byte{}
	}
	return afterKey(k)
}

// NegInf is the position before every key.
func NegInf() Bound { return Bound{key: []byte{}} }

// PosInf is the position after every key.
func PosInf() Bound { return Bound{inf: true} }

// Key returns the key the bound sits next to (nil for +∞).
func (b Bound) Key() []byte { return b.key }

// IsAfter reports whether the bound sits just after Key (else just before it).
func (b Bound) IsAfter() bool { return b.after }

// IsPosInf reports whether the bound is +∞.
func (b Bound) IsPosInf() bool { return b.inf }

// IsNegInf reports whether the bound is −∞ (just before the empty key).
func (b Bound) IsNegInf() bool { return !b.inf && !b.after && len(b.key) == 0 }

// Compare orders two bounds by position: -1, 0 or +1.
func (b Bound) Compare(o Bound) int {
	switch {
	case b.inf && o.inf:
		return 0
	case b.inf:
		return 1
	case o.inf:
		return -1
	}
	if c := bytes.Compare(b.key, o.key); c != 0 {
		return c
	}
	switch {
	case b.after == o.after:
		return 0
	case b.after:
		return 1
	}
	return -1
}

// Clone returns a bound that shares no memory with b.
func (b Bound) Clone() Bound {
	if !b.inf {
		b.key = bytes.Clone(b.key)
		if b.key == nil {
			b.key = []byte{}
		}
	}
	return b
}

// Size is the number of key bytes the bound references.
func (b Bound) Size() int { return len(b.key) }

// Range is a non-empty set of keys: every key k with Start < k < End, where
// Start and End are positions between keys (see Bound). Build ranges with
// Point, Prefix, Inclusive, HalfOpen, All or NewRange; the zero Range is not
// valid and is rejected with ErrInvalidRange.
//
// Normalization: both ends are stored as canonical Bounds, so two ranges
// that cover the same keys are Equal whatever way they were written. In
// bytewise order [k, k\x00) is [k, k], (k, k\x00) covers no key and is
// invalid, and [−∞, x) is ["", x).
//
// A Range refers to the byte slices it was built from; managers copy the
// keys they keep, so the caller may reuse its buffers once a call returns.
type Range struct {
	start, end Bound
}

// NewRange builds the range between two positions: BoundBefore(k) as a
// start includes k and as an end excludes it, BoundAfter(k) the other way
// round, NegInf and PosInf leave that end open (Range.Start and Range.End
// give a range's own). It returns ErrInvalidRange unless start is before
// end and some key lies between them.
func NewRange(start, end Bound) (Range, error) {
	if start.inf || start.Compare(end) >= 0 {
		return Range{}, invalidRange("start is not before end")
	}
	if start.key == nil {
		start.key = []byte{}
	}
	return Range{start: start, end: end}, nil
}

// Point returns [k, k]: the range holding only key k. It never fails.
func Point(k []byte) Range {
	if k == nil {
		k = []byte{}
	}
	return Range{start: before(k), end: afterKey(k)}
}

// Inclusive returns [start, end]: both ends included.
func Inclusive(start, end []byte) (Range, error) {
	return NewRange(BoundBefore(start), BoundAfter(end))
}

// HalfOpen returns [start, end).
func HalfOpen(start, end []byte) (Range, error) {
	return NewRange(BoundBefore(start), BoundBefore(end))
}

// All returns (−∞, +∞): every key.
func All() Range { return Range{start: NegInf(), end: PosInf()} }

// Prefix returns every key that starts with p: [p, p') where p' is the
// smallest key greater than every key with prefix p, or +∞ when p is empty or
// all 0xff bytes. It never fails.
func Prefix(p []byte) Range {
	start := Point(p).start
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			end := make([]byte, i+1)
			copy(end, p[:i+1])
			end[i]++
			return Range{start: start, end: before(end)}
		}
	}
	return Range{start: start, end: PosInf()}
}

// Valid reports whether r covers at least one key (the zero Range does not).
func (r Range) Valid() bool {
	return r.start.key != nil && !r.start.inf && r.start.Compare(r.end) < 0
}

// Start returns the lower bound.
func (r Range) Start() Bound { return r.start }

// End returns the upper bound.
func (r Range) End() Bound { return r.end }

// PointKey returns k and true if r is [k, k].
func (r Range) PointKey() ([]byte, bool) {
	if r.end.inf || !r.end.after {
		return nil, false
	}
	if !r.start.after {
		// [k, ...: a point iff the end is just after k. Point(k) makes
		// both bounds share k's bytes: no need to compare them.
		s, e := r.start.key, r.end.key
		if len(s) == len(e) && unsafe.SliceData(s) == unsafe.SliceData(e) {
			return s, true
		}
		return s, bytes.Equal(s, e)
	}
	// (p, ...: the first key is p+"\x00"; a point iff end is just after it.
	n := len(r.start.key)
	if len(r.end.key) == n+1 && r.end.key[n] == 0 && bytes.Equal(r.start.key, r.end.key[:n]) {
		return r.end.key, true
	}
	return nil, false
}

// Contains reports whether key k is in r.
func (r Range) Contains(k []byte) bool {
	return r.start.Compare(before(k)) <= 0 && afterKey(k).Compare(r.end) <= 0
}

// Overlaps reports whether r and o share at least one key.
func (r Range) Overlaps(o Range) bool {
	return r.start.Compare(o.end) < 0 && o.start.Compare(r.end) < 0
}

// Covers reports whether every key of o is in r.
func (r Range) Covers(o Range) bool {
	return r.start.Compare(o.start) <= 0 && o.end.Compare(r.end) <= 0
}

// Equal reports whether r and o cover the same keys.
func (r Range) Equal(o Range) bool {
	return r.start.Compare(o.start) == 0 && r.end.Compare(o.end) == 0
}

// Clone returns a range that shares no memory with r.
func (r Range) Clone() Range { return Range{start: r.start.Clone(), end: r.end.Clone()} }

// Size is the number of key bytes the range references.
func (r Range) Size() int { return r.start.Size() + r.end.Size() }

// String renders the range in bracket notation: "[a, b)", "(a, +inf)",
// or "[k]" for a point. Printable ASCII keys print as they are, other bytes
// as \xNN escapes.
func (r Range) String() string {
	if !r.Valid() {
		return "<invalid range>"
	}
	if k, ok := r.PointKey(); ok {
		return "[" + FormatKey(k) + "]"
	}
	var sb strings.Builder
	switch {
	case r.start.IsNegInf():
		sb.WriteString("(-inf")
	case r.start.after:
		sb.WriteString("(" + FormatKey(r.start.key))
	default:
		sb.WriteString("[" + FormatKey(r.start.key))
	}
	sb.WriteString(", ")
	switch {
	case r.end.inf:
		sb.WriteString("+inf)")
	case r.end.after:
		sb.WriteString(FormatKey(r.end.key) + "]")
	default:
		sb.WriteString(FormatKey(r.end.key) + ")")
	}
	return sb.String()
}

// FormatKey renders a key for humans: printable ASCII as it is (with
// backslash, comma and brackets escaped), every other byte as \xNN. The
// empty key renders as "".
func FormatKey(k []byte) string {
	if len(k) == 0 {
		return `""`
	}
	const hex = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range k {
		switch {
		case c == '\\' || c == ',' || c == '[' || c == ']' || c == '(' || c == ')' || c == '"':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c >= 0x21 && c <= 0x7e:
			sb.WriteByte(c)
		default:
			sb.WriteString(`\x`)
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
		}
	}
	return sb.String()
}
