package txnlock

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The record of a Txn handle: what the transaction holds in one manager,
// so that a lock already held in a covering mode is not sent again, and
// what RollbackTo must release. It never says more is held than the
// manager holds (it may say less: a covered request is then sent again,
// and granted at once).
//
// Entries are points and ranges, each with its column family, its mode
// and seq, the place of the request that first took it among the
// handle's requests (savepoints compare seqs). A point has one entry,
// upgraded in place; a range request that is not covered adds an entry
// even if an equal range is held in a weaker mode (so a rollback past it
// finds it, and unlocks none of the keys the older entry holds).

// pointKey names a point lock in a record's index.
type pointKey struct {
	cf  ColumnFamily
	key string
}

// heldPoint is a point lock: its key is keys[off:off+n] of the record,
// and fp is the key's fingerprint.
type heldPoint struct {
	cf     ColumnFamily
	mode   Mode
	off, n uint32
	fp     uint64
	seq    uint64
}

// fingerprint is a summary of key that the linear scan compares before
// the key itself: its first and last 8 bytes (all of a shorter key), so
// keys that differ near either end, as row keys of one table do, almost
// always differ in it.
func fingerprint(key []byte) uint64 {
	n := len(key)
	if n < 8 {
		var b [8]byte
		copy(b[:], key)
		return binary.LittleEndian.Uint64(b[:])
	}
	return bits.RotateLeft64(binary.LittleEndian.Uint64(key), 32) ^ binary.LittleEndian.Uint64(key[n-8:])
}

func (p heldPoint) key(keys []byte) []byte { return keys[p.off : p.off+p.n] }

// heldRange is a range lock (or the part of one an early Unlock left).
type heldRange struct {
	cf   ColumnFamily
	r    Range
	mode Mode
	seq  uint64
}

// maxScanned is how many point locks a record scans linearly before it
// indexes them in a map: a short transaction (a handful of rows and their
// index entries) allocates no map and copies its keys into one buffer.
const maxScanned = 16

// record is what a handle holds in one manager. It is guarded by the
// handle's mutex and never copied once used (points and keys start in
// its own arrays).
type record struct {
	m      Manager
	points []heldPoint // in the order taken, but for removals
	keys   []byte      // the points' keys, back to back; never rewritten
	// index maps a point to its place in points, once there are more
	// than maxScanned.
	index  map[pointKey]int
	ranges []heldRange // few per transaction: scanned linearly

	pointsBuf [8]heldPoint
	keysBuf   [256]byte
}

// find returns the place of key in cf in r.points, or -1.
func (r *record) find(cf ColumnFamily, key []byte) int {
	if r.index != nil {
		if i, ok := r.index[pointKey{cf, string(key)}]; ok {
			return i
		}
		return -1
	}
	fp := fingerprint(key)
	for i, p := range r.points {
		if p.fp == fp && p.cf == cf && int(p.n) == len(key) && string(p.key(r.keys)) == string(key) {
			return i
		}
	}
	return -1
}

// coversPoint reports whether the record holds key in cf in a mode
// covering mode, as a point lock or inside a range lock, and where key's
// point lock is in r.points (-1: none), for addPoint: one search serves
// both.
func (r *record) coversPoint(cf ColumnFamily, key []byte, mode Mode) (ok bool, at int) {
	at = r.find(cf, key)
	if at >= 0 && r.points[at].mode.Covers(mode) {
		return true, at
	}
	for _, h := range r.ranges {
		if h.cf == cf && h.mode.Covers(mode) && h.r.Contains(key) {
			return true, at
		}
	}
	return false, at
}

// coversRange reports whether one range lock of the record in cf
// contains rg in a mode covering mode.
func (r *record) coversRange(cf ColumnFamily, rg Range, mode Mode) bool {
	for _, h := range r.ranges {
		if h.cf == cf && h.mode.Covers(mode) && h.r.Covers(rg) {
			return true
		}
	}
	return false
}

// addPoint records key in cf as held in mode (or stronger, if it was).
// at is where coversPoint found key's point lock (-1: none); nothing may
// have changed the record since. A new point gets seq.
func (r *record) addPoint(at int, cf ColumnFamily, key []byte, mode Mode, seq uint64) {
	if at >= 0 {
		r.points[at].mode = r.points[at].mode.Max(mode)
		return
	}
	if r.points == nil {
		r.points, r.keys = r.pointsBuf[:0], r.keysBuf[:0]
	}
	// Where there is room, the slices grow by reslicing, which writes
	// only their lengths (an append writes their pointers back too).
	p := heldPoint{cf: cf, mode: mode, off: uint32(len(r.keys)), n: uint32(len(key)), fp: fingerprint(key), seq: seq}
	if n := len(r.points); n < cap(r.points) {
		r.points = r.points[:n+1]
		r.points[n] = p
	} else {
		r.points = append(r.points, p)
	}
	if n := len(r.keys); len(key) <= cap(r.keys)-n {
		r.keys = r.keys[:n+len(key)]
		copy(r.keys[n:], key)
	} else {
		r.keys = append(r.keys, key...)
	}
	switch n := len(r.points); {
	case r.index != nil:
		r.index[pointKey{cf, string(key)}] = n - 1
	case n > maxScanned:
		r.reindex()
	}
}

// reindex rebuilds the index from r.points.
func (r *record) reindex() {
	r.index = make(map[pointKey]int, 2*len(r.points))
	for i, p := range r.points {
		r.index[pointKey{p.cf, string(p.key(r.keys))}] = i
	}
}

// removePointAt forgets r.points[i]. Its key's bytes stay in r.keys until
// the handle is released.
func (r *record) removePointAt(i int) {
	last := len(r.points) - 1
	if r.index != nil {
		p := r.points[i]
		delete(r.index, pointKey{p.cf, string(p.key(r.keys))})
		if i != last {
			q := r.points[last]
			r.index[pointKey{q.cf, string(q.key(r.keys))}] = i
		}
	}
	r.points[i] = r.points[last]
	r.points = r.points[:last]
}

// forget removes the keys of rg in cf from the record, after the manager
// unlocked them: points in rg go, ranges that overlap rg keep only their
// parts outside it (with their mode and seq). A manager like rangelock
// unlocks exactly those keys; one that unlocks only whole locks unlocks
// less, and the record then says less than is held, which is safe.
func (r *record) forget(cf ColumnFamily, rg Range) {
	if k, ok := rg.PointKey(); ok {
		if i := r.find(cf, k); i >= 0 {
			r.removePointAt(i)
		}
	} else {
		for i := len(r.points) - 1; i >= 0; i-- {
			if p := r.points[i]; p.cf == cf && rg.Contains(p.key(r.keys)) {
				r.removePointAt(i)
			}
		}
	}
	n := len(r.ranges)
	for i := range n {
		h := r.ranges[i]
		if h.cf != cf || !h.r.Overlaps(rg) {
			continue
		}
		for _, p := range subtract(h.r, []Range{rg}, nil) {
			r.ranges = append(r.ranges, heldRange{cf: cf, r: p.Clone(), mode: h.mode, seq: h.seq})
		}
		r.ranges[i].mode = 0 // dropped below
	}
	r.ranges = slices.DeleteFunc(r.ranges, func(h heldRange) bool { return h.mode == 0 })
}

// heldAt returns, appended to dst, the ranges of the entries in cf that
// overlap rg and were taken at or before seq: points as [k, k].
func (r *record) heldAt(dst []Range, cf ColumnFamily, rg Range, seq uint64) []Range {
	for _, h := range r.ranges {
		if h.cf == cf && h.seq <= seq && h.r.Overlaps(rg) {
			dst = append(dst, h.r)
		}
	}
	for _, p := range r.points {
		if p.cf == cf && p.seq <= seq && rg.Contains(p.key(r.keys)) {
			dst = append(dst, Point(p.key(r.keys)))
		}
	}
	return dst
}

// rollbackTo unlocks in r.m what txn first took after seq, except the
// keys that entries taken at or before seq hold, and drops those entries.
// Ranges go first, each as the pieces of it that neither an older entry
// nor an earlier piece holds (so no key is unlocked twice); then points
// that none of those holds. It returns the manager's errors appended to
// errs; entries are dropped whatever the errors.
func (r *record) rollbackTo(txn TxnID, seq uint64, errs []error) []error {
	var released []heldRange // pieces unlocked, by column family
	var holes []Range
	for _, h := range r.ranges {
		if h.seq <= seq {
			continue
		}
		holes = r.heldAt(holes[:0], h.cf, h.r, seq)
		for _, p := range released {
			if p.cf == h.cf && p.r.Overlaps(h.r) {
				holes = append(holes, p.r)
			}
		}
		for _, p := range subtract(h.r, holes, nil) {
			if err := r.m.Unlock(txn, h.cf, p); err != nil {
				errs = append(errs, err)
			}
			released = append(released, heldRange{cf: h.cf, r: p})
		}
	}
	for _, p := range r.points {
		if p.seq <= seq {
			continue
		}
		k := p.key(r.keys)
		if r.heldInRange(p.cf, k, seq) || releasedContains(released, p.cf, k) {
			continue
		}
		if err := r.m.Unlock(txn, p.cf, Point(k)); err != nil {
			errs = append(errs, err)
		}
	}
	r.ranges = slices.DeleteFunc(r.ranges, func(h heldRange) bool { return h.seq > seq })
	n := len(r.points)
	r.points = slices.DeleteFunc(r.points, func(p heldPoint) bool { return p.seq > seq })
	if r.index != nil && len(r.points) != n {
		r.reindex()
	}
	return errs
}

// heldInRange reports whether a range entry in cf taken at or before seq
// contains key.
func (r *record) heldInRange(cf ColumnFamily, key []byte, seq uint64) bool {
	for _, h := range r.ranges {
		if h.cf == cf && h.seq <= seq && h.r.Contains(key) {
			return true
		}
	}
	return false
}

func releasedContains(released []heldRange, cf ColumnFamily, key []byte) bool {
	for _, p := range released {
		if p.cf == cf && p.r.Contains(key) {
			return true
		}
	}
	return false
}

// subtract returns, appended to dst, the keys of r that none of holes
// holds, as the fewest disjoint ranges in key order: r itself if no hole
// overlaps it. holes is reordered. The result refers to the bounds of r
// and holes.
func subtract(r Range, holes []Range, dst []Range) []Range {
	slices.SortFunc(holes, func(a, b Range) int { return a.Start().Compare(b.Start()) })
	cur, cut := r.Start(), false
	for _, h := range holes {
		if !h.Overlaps(r) {
			continue
		}
		cut = true
		if cur.Compare(h.Start()) < 0 {
			p, _ := NewRange(cur, h.Start()) // cur < h.Start() < r.End()
			dst = append(dst, p)
		}
		if h.End().Compare(cur) > 0 {
			cur = h.End()
		}
		if cur.Compare(r.End()) >= 0 {
			return dst
		}
	}
	if !cut {
		return append(dst, r)
	}
	p, _ := NewRange(cur, r.End()) // cur < r.End()
	return append(dst, p)
}
