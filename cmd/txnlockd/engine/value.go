package engine

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Kind is a value's type: the engine stores integers and strings.
type Kind uint8

// The kinds.
const (
	Null Kind = iota
	Int
	Str
)

// Value is one column value.
type Value struct {
	K Kind
	I int64
	S string
}

// IntValue and StrValue make values.
func IntValue(i int64) Value  { return Value{K: Int, I: i} }
func StrValue(s string) Value { return Value{K: Str, S: s} }

// String renders the value as MySQL's text protocol does (NULL as "NULL").
func (v Value) String() string {
	switch v.K {
	case Int:
		return strconv.FormatInt(v.I, 10)
	case Str:
		return v.S
	}
	return "NULL"
}

// AsInt converts v to an integer as MySQL does in numeric context: a
// string's leading number (an empty or non-numeric prefix is 0). ok is
// false for NULL.
func (v Value) AsInt() (n int64, ok bool) {
	switch v.K {
	case Int:
		return v.I, true
	case Str:
		s := strings.TrimSpace(v.S)
		end := 0
		for end < len(s) && (s[end] >= '0' && s[end] <= '9' || end == 0 && (s[end] == '-' || s[end] == '+')) {
			end++
		}
		n, _ = strconv.ParseInt(s[:end], 10, 64)
		return n, true
	}
	return 0, false
}

// Compare orders two non-NULL values as MySQL compares them: numerically
// if either is an integer, else byte-wise (binary collation).
func Compare(a, b Value) int {
	if a.K == Int || b.K == Int {
		x, _ := a.AsInt()
		y, _ := b.AsInt()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a.S, b.S)
}

// encodeRow encodes a row: per column a kind byte, then a varint or a
// length-prefixed string.
func encodeRow(dst []byte, row []Value) []byte {
	for _, v := range row {
		dst = append(dst, byte(v.K))
		switch v.K {
		case Int:
			dst = binary.AppendVarint(dst, v.I)
		case Str:
			dst = binary.AppendUvarint(dst, uint64(len(v.S)))
			dst = append(dst, v.S...)
		}
	}
	return dst
}

// decodeRow decodes a row of n columns.
func decodeRow(b []byte, n int) ([]Value, error) {
	row := make([]Value, n)
	for i := range row {
		if len(b) == 0 {
			return nil, fmt.Errorf("row has %d of %d columns", i, n)
		}
		k := Kind(b[0])
		b = b[1:]
		switch k {
		case Null:
		case Int:
			x, m := binary.Varint(b)
			if m <= 0 {
				return nil, fmt.Errorf("column %d: bad integer", i)
			}
			row[i], b = IntValue(x), b[m:]
		case Str:
			l, m := binary.Uvarint(b)
			if m <= 0 || uint64(len(b)-m) < l {
				return nil, fmt.Errorf("column %d: bad string", i)
			}
			row[i], b = StrValue(string(b[m:m+int(l)])), b[m+int(l):]
		default:
			return nil, fmt.Errorf("column %d: kind %d", i, k)
		}
	}
	return row, nil
}

// appendInt appends i big-endian with the sign bit flipped: byte order is
// numeric order.
func appendInt(dst []byte, i int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(i)^(1<<63))
}

func readInt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// appendKeyValue appends v in an order-preserving form for index keys:
// NULL first, then integers, then strings (0x00 escaped as 0x00 0xff,
// ended by 0x00 0x01, so a string sorts before its extensions).
func appendKeyValue(dst []byte, v Value) []byte {
	switch v.K {
	case Null:
		return append(dst, 0)
	case Int:
		return appendInt(append(dst, 1), v.I)
	}
	dst = append(dst, 2)
	for i := 0; i < len(v.S); i++ {
		if v.S[i] == 0 {
			dst = append(dst, 0, 0xff)
			continue
		}
		dst = append(dst, v.S[i])
	}
	return append(dst, 0, 1)
}
