package txnlock

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// writtenEnd is one end of a range as a test writes it: a key included or
// excluded, or open (−∞ as a start, +∞ as an end). The tests read ranges
// written so, by their own rules, and build them through NewRange's bounds.
type writtenEnd struct {
	Key  []byte
	Kind endKind
}

type endKind uint8

const (
	endInclusive endKind = iota + 1
	endExclusive
	endOpen
)

func inclusiveEnd(k []byte) writtenEnd { return writtenEnd{Key: k, Kind: endInclusive} }
func exclusiveEnd(k []byte) writtenEnd { return writtenEnd{Key: k, Kind: endExclusive} }
func openEnd() writtenEnd              { return writtenEnd{Kind: endOpen} }

// rangeOf builds the range between two written ends: an included start is
// the position before its key, an excluded one the position after it, and
// the other way round for an end.
func rangeOf(start, end writtenEnd) (Range, error) {
	s, e := NegInf(), PosInf()
	switch start.Kind {
	case endInclusive:
		s = BoundBefore(start.Key)
	case endExclusive:
		s = BoundAfter(start.Key)
	}
	switch end.Kind {
	case endInclusive:
		e = BoundAfter(end.Key)
	case endExclusive:
		e = BoundBefore(end.Key)
	}
	return NewRange(s, e)
}

func mustRange(t *testing.T, start, end writtenEnd) Range {
	t.Helper()
	r, err := rangeOf(start, end)
	require.NoError(t, err)
	return r
}

func TestRangeNormalization(t *testing.T) {
	k := []byte("k")
	k0 := []byte("k\x00")
	cases := []struct {
		name string
		a, b Range
	}{
		{"[k, k\\x00) is [k, k]", mustRange(t, inclusiveEnd(k), exclusiveEnd(k0)), Point(k)},
		{"(k, +inf) is [k\\x00, +inf)", mustRange(t, exclusiveEnd(k), openEnd()), mustRange(t, inclusiveEnd(k0), openEnd())},
		{"[-inf, x) is [\"\", x)", mustRange(t, openEnd(), exclusiveEnd([]byte("x"))), mustRange(t, inclusiveEnd(nil), exclusiveEnd([]byte("x")))},
		{"[a, b] is [a, b\\x00)", mustRange(t, inclusiveEnd([]byte("a")), inclusiveEnd([]byte("b"))), mustRange(t, inclusiveEnd([]byte("a")), exclusiveEnd([]byte("b\x00")))},
		{"Prefix(k) is [k, l)", Prefix(k), mustRange(t, inclusiveEnd(k), exclusiveEnd([]byte("l")))},
		{"Prefix(\"\") is All", Prefix(nil), All()},
		{"Prefix(\\xff\\xff) is [\\xff\\xff, +inf)", Prefix([]byte{0xff, 0xff}), mustRange(t, inclusiveEnd([]byte{0xff, 0xff}), openEnd())},
		{"Prefix(a\\xff) is [a\\xff, b)", Prefix([]byte("a\xff")), mustRange(t, inclusiveEnd([]byte("a\xff")), exclusiveEnd([]byte("b")))},
		{"Point(k\\x00) is (k, k\\x00]", Point(k0), mustRange(t, exclusiveEnd(k), inclusiveEnd(k0))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.True(t, c.a.Equal(c.b), "%v vs %v", c.a, c.b)
			require.Equal(t, c.a.Start(), c.b.Start())
			require.Equal(t, c.a.End(), c.b.End())
		})
	}
}

func TestInvalidRanges(t *testing.T) {
	k := []byte("k")
	cases := []struct {
		name       string
		start, end writtenEnd
	}{
		{"(k, k\\x00) covers no key", exclusiveEnd(k), exclusiveEnd([]byte("k\x00"))},
		{"[k, k) is empty", inclusiveEnd(k), exclusiveEnd(k)},
		{"(k, k] is empty", exclusiveEnd(k), inclusiveEnd(k)},
		{"start after end", inclusiveEnd([]byte("z")), inclusiveEnd([]byte("a"))},
		{"[-inf, \"\") is empty", openEnd(), exclusiveEnd(nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rangeOf(c.start, c.end)
			require.ErrorIs(t, err, ErrInvalidRange)
		})
	}
	require.False(t, Range{}.Valid(), "the zero Range is invalid")
	_, err := NewRange(PosInf(), PosInf())
	require.ErrorIs(t, err, ErrInvalidRange)
}

func TestPointKey(t *testing.T) {
	for _, k := range []string{"", "a", "a\x00", "\x00", "\x00\x00", "ab\xff"} {
		got, ok := Point([]byte(k)).PointKey()
		require.True(t, ok, "%q", k)
		require.Equal(t, k, string(got))
	}
	r, _ := Inclusive([]byte("a"), []byte("b"))
	_, ok := r.PointKey()
	require.False(t, ok)
	_, ok = All().PointKey()
	require.False(t, ok)
	_, ok = Prefix([]byte("a")).PointKey()
	require.False(t, ok)
}

func TestRangeString(t *testing.T) {
	r1, _ := Inclusive([]byte("10"), []byte("20"))
	r2, _ := HalfOpen([]byte("a"), []byte("b"))
	r3, _ := rangeOf(exclusiveEnd([]byte("a")), openEnd())
	require.Equal(t, "[10, 20]", r1.String())
	require.Equal(t, "[a, b)", r2.String())
	require.Equal(t, "(a, +inf)", r3.String())
	require.Equal(t, "(-inf, +inf)", All().String())
	require.Equal(t, `[k\x01]`, Point([]byte("k\x01")).String())
	require.Equal(t, "<invalid range>", Range{}.String())
}

// keySet enumerates which keys of a small universe a range covers, the
// brute-force reference for Contains, Overlaps, Covers and Equal.
var universe = func() [][]byte {
	var u [][]byte
	alpha := []byte{0, 1, 'a', 0xff}
	u = append(u, []byte{})
	for _, a := range alpha {
		u = append(u, []byte{a})
		for _, b := range alpha {
			u = append(u, []byte{a, b})
		}
	}
	return u
}()

// probes are the keys membership is checked on: the universe plus each
// universe key's successor k+"\x00". Every non-empty intersection of ranges
// whose endpoints come from the universe contains a probe: it starts just
// before some key k (and holds k) or just after k (and holds k+"\x00").
var probes = func() [][]byte {
	p := append([][]byte(nil), universe...)
	for _, k := range universe {
		p = append(p, append(append([]byte(nil), k...), 0))
	}
	return p
}()

func keySet(r Range) []bool {
	s := make([]bool, len(probes))
	for i, k := range probes {
		s[i] = r.Contains(k)
	}
	return s
}

func randEndpoint(rng *rand.Rand) writtenEnd {
	k := universe[rng.IntN(len(universe))]
	switch rng.IntN(5) {
	case 0:
		return openEnd()
	case 1, 2:
		return inclusiveEnd(k)
	}
	return exclusiveEnd(k)
}

// containsRef decides membership from the endpoints as written, without
// normalization: the reference the canonical form must agree with.
func containsRef(start, end writtenEnd, k []byte) bool {
	switch start.Kind {
	case endInclusive:
		if bytes.Compare(k, start.Key) < 0 {
			return false
		}
	case endExclusive:
		if bytes.Compare(k, start.Key) <= 0 {
			return false
		}
	}
	switch end.Kind {
	case endInclusive:
		return bytes.Compare(k, end.Key) <= 0
	case endExclusive:
		return bytes.Compare(k, end.Key) < 0
	}
	return true
}

// TestRangeAgainstKeySets checks normalization, Contains, Overlaps, Covers
// against brute-force key sets: endpoints come from a universe with the
// empty key, \x00 and 0xff bytes; membership is probed on the universe and
// its successors.
func TestRangeAgainstKeySets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ranges []Range
	for range 3000 {
		s, e := randEndpoint(rng), randEndpoint(rng)
		r, err := rangeOf(s, e)
		any := false
		for _, k := range probes {
			if containsRef(s, e, k) {
				any = true
				require.True(t, err == nil && r.Contains(k), "%v %v key %q", s, e, k)
			} else if err == nil {
				require.False(t, r.Contains(k), "%v: key %q", r, k)
			}
		}
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalidRange))
			require.False(t, any, "rejected a non-empty range %v %v", s, e)
			continue
		}
		ranges = append(ranges, r)
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		a, b := ranges[i], ranges[i+1]
		sa, sb := keySet(a), keySet(b)
		overlap, covers, equal := false, true, true
		for j := range sa {
			overlap = overlap || (sa[j] && sb[j])
			covers = covers && (!sb[j] || sa[j])
			equal = equal && sa[j] == sb[j]
		}
		require.Equal(t, equal, a.Equal(b), "%v equals %v", a, b)
		require.True(t, a.Equal(a.Clone()))
		require.Equal(t, overlap, a.Overlaps(b), "%v overlaps %v", a, b)
		require.Equal(t, covers, a.Covers(b), "%v covers %v", a, b)
	}
}

func TestBoundCompareIsTotalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var bs []Bound
	for range 200 {
		if r, err := rangeOf(randEndpoint(rng), randEndpoint(rng)); err == nil {
			bs = append(bs, r.Start(), r.End())
		}
	}
	for _, a := range bs {
		for _, b := range bs {
			require.Equal(t, a.Compare(b), -b.Compare(a))
			for _, c := range bs[:20] {
				if a.Compare(b) <= 0 && b.Compare(c) <= 0 {
					require.LessOrEqual(t, a.Compare(c), 0)
				}
			}
		}
	}
}

func TestCloneSharesNoMemory(t *testing.T) {
	buf := []byte("abc")
	r := Point(buf)
	c := r.Clone()
	buf[0] = 'z'
	require.Equal(t, "[abc]", c.String())
	require.Equal(t, "[zbc]", r.String())
}
