package sbtest

import (
	"encoding/binary"
	"fmt"

	"github.com/txnlock/txnlock"
)

// Row is one row of sbtestN.
type Row struct {
	ID, K  int64
	C, Pad string
}

// Column widths of sysbench's schema: c CHAR(120), pad CHAR(60).
const (
	MaxC   = 120
	MaxPad = 60
)

// Key layout, the same in every column-family layout (a column family only
// decides which lock map or locktree a key is locked in):
//
//	PK entry  't' table(4) 'p' id(8)          → k(8) len(c)(1) c pad
//	SK entry  't' table(4) 'k' k(8) id(8)     → ""
//
// Integers are big-endian with the sign bit flipped, so byte order is
// numeric order. The table and AUTO-INC lock keys live only in the manager
// (default column family), never in Pebble:
//
//	table lock     0xff "table" table(4)
//	AUTO-INC lock  0xff "autoinc" table(4)
const (
	pkTag = 'p'
	skTag = 'k'
)

func appendInt(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

func readInt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func tablePrefix(table int, tag byte) []byte {
	b := []byte{'t'}
	b = binary.BigEndian.AppendUint32(b, uint32(table))
	return append(b, tag)
}

func pkKey(prefix []byte, id int64) []byte {
	return appendInt(append(make([]byte, 0, len(prefix)+8), prefix...), id)
}

func skKey(prefix []byte, k, id int64) []byte {
	b := append(make([]byte, 0, len(prefix)+16), prefix...)
	return appendInt(appendInt(b, k), id)
}

func lockKey(kind string, table int) []byte {
	b := append([]byte{0xff}, kind...)
	return binary.BigEndian.AppendUint32(b, uint32(table))
}

// encodeRow encodes the PK value (c and pad already length-checked).
func encodeRow(r Row) []byte {
	b := make([]byte, 0, 9+len(r.C)+len(r.Pad))
	b = appendInt(b, r.K)
	b = append(b, byte(len(r.C)))
	b = append(b, r.C...)
	return append(b, r.Pad...)
}

func decodeRow(id int64, v []byte) (Row, error) {
	if len(v) < 9 || len(v) < 9+int(v[8]) {
		return Row{}, &opError{op: fmt.Sprintf("decode row %d", id), err: fmt.Errorf("%w: value of %d bytes", ErrInconsistent, len(v))}
	}
	n := int(v[8])
	return Row{ID: id, K: readInt(v), C: string(v[9 : 9+n]), Pad: string(v[9+n:])}, nil
}

// idRange is id BETWEEN lo AND hi as a key range: [pk(lo), pk(hi)].
func idRange(prefix []byte, lo, hi int64) (txnlock.Range, error) {
	return txnlock.Inclusive(pkKey(prefix, lo), pkKey(prefix, hi))
}
