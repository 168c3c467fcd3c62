package pebbletxn

import (
	"encoding/binary"

	"github.com/txnlock/txnlock"
)

// Key layout in the Pebble DB. Every key starts with a 4-byte big-endian
// column family id, so a column family is a contiguous key span:
//
//	00 00 00 00 | user key      default column family (id 0)
//	00 00 00 07 | user key      column family 7
//	ff ff ff ff | "cf/" name    catalog: name → 4-byte id (metadata)
//
// Lock requests carry the user key without the prefix, in the manager's
// column family of the same id: each column family has its own lock map
// (pointlock) or locktree (rangelock).
const prefixLen = 4

// metaID is the prefix of the catalog; it is never a column family id.
const metaID = 0xffffffff

// MaxColumnFamilyName is the longest column family name, in bytes.
const MaxColumnFamilyName = 255

func cfPrefix(id uint32) []byte {
	return binary.BigEndian.AppendUint32(make([]byte, 0, prefixLen), id)
}

// catalogKey is the catalog entry of a column family name.
func catalogKey(name string) []byte {
	return append(append(cfPrefix(metaID), "cf/"...), name...)
}

// appendKey appends the Pebble key of user key k in column family cf.
func appendKey(dst []byte, cf txnlock.ColumnFamily, k []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(cf))
	return append(dst, k...)
}

// bounds turns r into Pebble iterator bounds [lower, upper) inside column
// family cf.
func bounds(cf txnlock.ColumnFamily, r txnlock.Range) (lower, upper []byte) {
	s := r.Start()
	lower = appendKey(nil, cf, s.Key())
	if s.IsAfter() {
		lower = append(lower, 0)
	}
	e := r.End()
	if e.IsPosInf() {
		return lower, cfPrefix(uint32(cf) + 1)
	}
	upper = appendKey(nil, cf, e.Key())
	if e.IsAfter() {
		upper = append(upper, 0)
	}
	return lower, upper
}
