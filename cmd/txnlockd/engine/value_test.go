package engine

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func randomValue(r *rand.Rand) Value {
	switch r.IntN(3) {
	case 0:
		return Value{}
	case 1:
		return IntValue(r.Int64N(2000) - 1000)
	}
	b := make([]byte, r.IntN(4))
	for i := range b {
		b[i] = []byte{0, 1, 'a', 'b', 0xff}[r.IntN(5)]
	}
	return StrValue(string(b))
}

// order is the index order: NULL, then integers, then strings.
func order(a, b Value) int {
	if a.K != b.K {
		return int(a.K) - int(b.K)
	}
	if a.K == Null {
		return 0
	}
	return Compare(a, b)
}

// TestKeyOrder: the index encoding sorts as the values do, and rows
// decode to what was encoded.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := []Value{randomValue(r), randomValue(r)}, []Value{randomValue(r), randomValue(r)}
		ka := appendKeyValue(appendKeyValue(nil, a[0]), a[1])
		kb := appendKeyValue(appendKeyValue(nil, b[0]), b[1])
		want := order(a[0], b[0])
		if want == 0 {
			want = order(a[1], b[1])
		}
		got := bytes.Compare(ka, kb)
		require.Equal(t, sign(want), sign(got), "%v %v", a, b)
		row, err := decodeRow(encodeRow(nil, a), 2)
		require.NoError(t, err)
		require.Equal(t, a, row)
	}
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func FuzzDecodeRow(f *testing.F) {
	f.Add(encodeRow(nil, []Value{IntValue(5), StrValue("x"), {}}), 3)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		row, err := decodeRow(b, n)
		if err == nil {
			require.Len(t, row, n)
		}
	})
}
