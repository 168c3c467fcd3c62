package txnlock

import (
	"bytes"
	"fmt"
	"testing"
)

// fuzzAlphabet: the bytes fuzz keys are made of. \x00 makes keys whose
// "just before" is another key's "just after"; \xff makes prefixes that run
// to +∞.
var fuzzAlphabet = []byte{0x00, 0x01, 'a', 0xff}

// fuzzUniverse is every key of up to 4 bytes over fuzzAlphabet. Fuzz keys
// have at most 2 bytes, so for any two distinct positions the universe
// holds a key between them (k and k+"\x00" are in it), and a set of keys
// described by fuzz endpoints is empty exactly when its part in the
// universe is.
var fuzzUniverse = func() [][]byte {
	keys := [][]byte{{}}
	for n, level := 0, [][]byte{{}}; n < 4; n++ {
		var next [][]byte
		for _, k := range level {
			for _, c := range fuzzAlphabet {
				next = append(next, append(bytes.Clone(k), c))
			}
		}
		keys = append(keys, next...)
		level = next
	}
	return keys
}()

// fuzzEndpoint reads an endpoint from two bytes: kind and key.
func fuzzEndpoint(kind, key byte) writtenEnd {
	n := int(key % 3)
	k := make([]byte, n)
	for i := range k {
		k[i] = fuzzAlphabet[(key>>(2+2*i))%4]
	}
	switch kind % 3 {
	case 0:
		return inclusiveEnd(k)
	case 1:
		return exclusiveEnd(k)
	}
	return openEnd()
}

// inModel is the brute-force reading of a range written by its endpoints:
// does key u lie between start and end?
func inModel(start, end writtenEnd, u []byte) bool {
	switch start.Kind {
	case endInclusive:
		if bytes.Compare(u, start.Key) < 0 {
			return false
		}
	case endExclusive:
		if bytes.Compare(u, start.Key) <= 0 {
			return false
		}
	}
	switch end.Kind {
	case endInclusive:
		return bytes.Compare(u, end.Key) <= 0
	case endExclusive:
		return bytes.Compare(u, end.Key) < 0
	}
	return true
}

// keysBefore is the brute-force reading of a bound: the keys of the
// universe that lie before it, as a bitmap.
func keysBefore(b Bound) []bool {
	out := make([]bool, len(fuzzUniverse))
	for i, u := range fuzzUniverse {
		out[i] = BoundAfter(u).Compare(b) <= 0
	}
	return out
}

// subset compares two bitmaps by inclusion: -1 if a ⊂ b, 0 if equal, +1 if
// a ⊃ b, 2 if neither.
func subset(a, b []bool) int {
	less, more := false, false
	for i := range a {
		less = less || (!a[i] && b[i])
		more = more || (a[i] && !b[i])
	}
	switch {
	case less && more:
		return 2
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// FuzzBoundCompare builds two ranges from fuzzed endpoints and checks
// normalization, Bound.Compare, Contains, Overlaps, Covers, Equal, PointKey
// and Prefix against the key sets they stand for.
func FuzzBoundCompare(f *testing.F) {
	f.Add(byte(0), byte(1), byte(0), byte(1), byte(1), byte(2), byte(2), byte(0), byte(5))
	f.Add(byte(1), byte(1), byte(0), byte(5), byte(0), byte(4), byte(1), byte(6), byte(2))
	f.Add(byte(2), byte(0), byte(2), byte(0), byte(1), byte(7), byte(0), byte(7), byte(254))
	f.Add(byte(1), byte(4), byte(1), byte(7), byte(1), byte(2), byte(0), byte(2), byte(8))
	f.Fuzz(func(t *testing.T, sk, s, ek, e, sk2, s2, ek2, e2, p byte) {
		ends := [4]writtenEnd{fuzzEndpoint(sk, s), fuzzEndpoint(ek, e), fuzzEndpoint(sk2, s2), fuzzEndpoint(ek2, e2)}
		var rs [2]Range
		var sets [2][]bool
		var ok [2]bool
		for i := range rs {
			start, end := ends[2*i], ends[2*i+1]
			set := make([]bool, len(fuzzUniverse))
			n := 0
			for j, u := range fuzzUniverse {
				set[j] = inModel(start, end, u)
				if set[j] {
					n++
				}
			}
			r, err := rangeOf(start, end)
			if (err == nil) != (n > 0) {
				t.Fatalf("rangeOf(%v, %v) = %v, %v; model has %d keys", start, end, r, err, n)
			}
			if err != nil {
				continue
			}
			rs[i], sets[i], ok[i] = r, set, true
			if !r.Valid() || r.String() == "<invalid range>" {
				t.Fatalf("%v not valid", r)
			}
			for j, u := range fuzzUniverse {
				if r.Contains(u) != set[j] {
					t.Fatalf("%v.Contains(%q) = %v, model %v", r, u, r.Contains(u), set[j])
				}
			}
			// The bounds are the first and last positions of the set.
			if got, want := keysBefore(r.Start()), boolsNot(keysAtOrAfterStart(set)); subset(got, want) != 0 {
				t.Fatalf("%v: start bound disagrees with the model", r)
			}
			if k, isPoint := r.PointKey(); isPoint {
				if n != 1 || !r.Contains(k) || !r.Equal(Point(k)) {
					t.Fatalf("%v.PointKey() = %q but the model has %d keys", r, k, n)
				}
			} else if n == 1 {
				// A single key of the universe may still be a larger set
				// outside it; only claim a point when Point agrees.
				for j, u := range fuzzUniverse {
					if set[j] && r.Equal(Point(u)) {
						t.Fatalf("%v equals Point(%q) but PointKey says no", r, u)
					}
				}
			}
			if c := r.Clone(); !c.Equal(r) || c.String() != r.String() {
				t.Fatalf("Clone(%v) = %v", r, c)
			}
		}
		if ok[0] && ok[1] {
			a, b := rs[0], rs[1]
			inter, aInB, bInA, same := false, true, true, true
			for j := range fuzzUniverse {
				x, y := sets[0][j], sets[1][j]
				inter = inter || (x && y)
				aInB = aInB && (!x || y)
				bInA = bInA && (!y || x)
				same = same && x == y
			}
			if a.Overlaps(b) != inter || b.Overlaps(a) != inter {
				t.Fatalf("%v.Overlaps(%v) = %v, model %v", a, b, a.Overlaps(b), inter)
			}
			if b.Covers(a) != aInB || a.Covers(b) != bInA {
				t.Fatalf("Covers(%v, %v): %v %v, model %v %v", a, b, b.Covers(a), a.Covers(b), aInB, bInA)
			}
			if a.Equal(b) != same {
				t.Fatalf("%v.Equal(%v) = %v, model %v", a, b, a.Equal(b), same)
			}
			// Compare orders bounds as the sets of keys before them nest.
			bounds := []Bound{a.Start(), a.End(), b.Start(), b.End(), NegInf(), PosInf()}
			for _, x := range bounds {
				for _, y := range bounds {
					want := subset(keysBefore(x), keysBefore(y))
					if got := x.Compare(y); got != want {
						t.Fatalf("Compare(%+v, %+v) = %d, model %d", x, y, got, want)
					}
				}
			}
		}
		// Prefix(p) is exactly the keys that start with p.
		pe := fuzzEndpoint(0, p)
		pr := Prefix(pe.Key)
		for _, u := range fuzzUniverse {
			if pr.Contains(u) != bytes.HasPrefix(u, pe.Key) {
				t.Fatalf("Prefix(%q).Contains(%q) = %v", pe.Key, u, pr.Contains(u))
			}
		}
		// BoundBefore/BoundAfter are the starts NewRange builds.
		for _, k := range [][]byte{pe.Key, ends[0].Key} {
			in, _ := rangeOf(inclusiveEnd(k), openEnd())
			ex, _ := rangeOf(exclusiveEnd(k), openEnd())
			if BoundBefore(k).Compare(in.Start()) != 0 || BoundAfter(k).Compare(ex.Start()) != 0 {
				t.Fatalf("BoundBefore/BoundAfter(%q) disagree with rangeOf", k)
			}
			if fmt.Sprint(BoundBefore(k)) != fmt.Sprint(in.Start()) {
				t.Fatalf("BoundBefore(%q) = %+v is not canonical (%+v)", k, BoundBefore(k), in.Start())
			}
		}
	})
}

// keysAtOrAfterStart marks the keys at or after the set's first key.
func keysAtOrAfterStart(set []bool) []bool {
	// fuzzUniverse is not sorted; find the smallest key in the set.
	var first []byte
	found := false
	for j, u := range fuzzUniverse {
		if set[j] && (!found || bytes.Compare(u, first) < 0) {
			first, found = u, true
		}
	}
	out := make([]bool, len(set))
	for j, u := range fuzzUniverse {
		out[j] = bytes.Compare(u, first) >= 0
	}
	return out
}

func boolsNot(a []bool) []bool {
	out := make([]bool, len(a))
	for i, x := range a {
		out[i] = !x
	}
	return out
}
