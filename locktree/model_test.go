package locktree

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/txnlock/txnlock"
)

var long = flag.Bool("long", false, "run the long randomized modes (≥ 10,000,000 operations)")

// The model: a brute-force lock table over a small key universe. The
// universe's ranges cut the key order at finitely many positions (cuts);
// between two neighbouring cuts lies a cell, a non-empty set of keys that
// every range of the universe either contains whole or misses. A lock table
// is then, per transaction, a mode for every cell. The model uses only the
// root package's Bound.Compare and Range constructors, none of the tree's
// code.

// testKeys cover the endpoint cases: the empty key (−∞ as an inclusive
// start), keys with trailing \x00 (whose "just before" is another key's
// "just after"), a key and its prefixes, \xff keys (prefixes to +∞), and
// keys longer than a segment's inline key space.
var testKeys = [][]byte{
	{}, {0}, {0, 0}, []byte("a"), []byte("a\x00"), []byte("a\x01"), []byte("ab"),
	[]byte("b"), []byte("b\x00"), []byte("k0123456789abcdef"), []byte("k0123456789abcdef\x00"),
	{0xff}, {0xff, 0xff},
}

type universe struct {
	pool     []txnlock.Range // every valid NewRange over testKeys
	points   []txnlock.Range
	prefixes []txnlock.Range
	cuts     []txnlock.Bound // sorted, distinct
}

func newUniverse() *universe {
	u := &universe{}
	// Every position next to a test key, as either end; NegInf and PosInf
	// as the open start and end.
	starts, ends := []txnlock.Bound{txnlock.NegInf()}, []txnlock.Bound{txnlock.PosInf()}
	for _, k := range testKeys {
		starts = append(starts, txnlock.BoundBefore(k), txnlock.BoundAfter(k))
		ends = append(ends, txnlock.BoundBefore(k), txnlock.BoundAfter(k))
		u.points = append(u.points, txnlock.Point(k))
		u.prefixes = append(u.prefixes, txnlock.Prefix(k))
	}
	for _, s := range starts {
		for _, e := range ends {
			if r, err := txnlock.NewRange(s, e); err == nil {
				u.pool = append(u.pool, r)
			}
		}
	}
	for _, rs := range [][]txnlock.Range{u.pool, u.points, u.prefixes} {
		for _, r := range rs {
			u.cuts = append(u.cuts, r.Start(), r.End())
		}
	}
	slices.SortFunc(u.cuts, txnlock.Bound.Compare)
	u.cuts = slices.CompactFunc(u.cuts, func(a, b txnlock.Bound) bool { return a.Compare(b) == 0 })
	return u
}

func (u *universe) ncells() int { return len(u.cuts) - 1 }

// cut returns the index of bound b among the cuts.
func (u *universe) cut(b txnlock.Bound) int {
	i, ok := slices.BinarySearchFunc(u.cuts, b, txnlock.Bound.Compare)
	if !ok {
		panic(fmt.Sprintf("bound %v is not a cut", b))
	}
	return i
}

// cells returns the cells [i, j) of r.
func (u *universe) cells(r txnlock.Range) (int, int) { return u.cut(r.Start()), u.cut(r.End()) }

// span returns the range of cells [i, j).
func (u *universe) span(i, j int) txnlock.Range {
	r, err := txnlock.NewRange(u.cuts[i], u.cuts[j])
	if err != nil {
		panic(err)
	}
	return r
}

// model is the brute-force lock table: held[txn][cell] is txn's mode there.
type model struct {
	u    *universe
	held map[txnlock.TxnID][]txnlock.Mode
}

func newModel(u *universe) *model { return &model{u: u, held: map[txnlock.TxnID][]txnlock.Mode{}} }

func (m *model) mode(txn txnlock.TxnID, c int) txnlock.Mode {
	if h := m.held[txn]; h != nil {
		return h[c]
	}
	return 0
}

func (m *model) set(txn txnlock.TxnID, c int, md txnlock.Mode) {
	h := m.held[txn]
	if h == nil {
		h = make([]txnlock.Mode, m.u.ncells())
		m.held[txn] = h
	}
	h[c] = md
	if md == 0 && !slices.ContainsFunc(h, func(x txnlock.Mode) bool { return x != 0 }) {
		delete(m.held, txn)
	}
}

func (m *model) txns() []txnlock.TxnID {
	var ids []txnlock.TxnID
	for id := range m.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// lockRun is one owner's maximal run of cells of one mode.
type lockRun struct {
	owner txnlock.TxnID
	i, j  int
	mode  txnlock.Mode
}

// runs returns, for the owners keep accepts, their maximal runs of one mode
// within cells [lo, hi), ordered by start then owner.
func (m *model) runs(lo, hi int, keep func(txnlock.TxnID, txnlock.Mode) bool) []lockRun {
	var out []lockRun
	for _, id := range m.txns() {
		for c := lo; c < hi; {
			md := m.mode(id, c)
			if md == 0 || !keep(id, md) {
				c++
				continue
			}
			e := c
			for e < hi && m.mode(id, e) == md {
				e++
			}
			out = append(out, lockRun{owner: id, i: c, j: e, mode: md})
			c = e
		}
	}
	slices.SortStableFunc(out, func(a, b lockRun) int { return a.i - b.i })
	return out
}

func (m *model) conflicts(txn txnlock.TxnID, r txnlock.Range, md txnlock.Mode) []lockRun {
	i, j := m.u.cells(r)
	return m.runs(i, j, func(o txnlock.TxnID, h txnlock.Mode) bool { return o != txn && !md.Compatible(h) })
}

func (m *model) covered(txn txnlock.TxnID, r txnlock.Range, md txnlock.Mode) bool {
	i, j := m.u.cells(r)
	for c := i; c < j; c++ {
		if !m.mode(txn, c).Covers(md) {
			return false
		}
	}
	return true
}

func (m *model) acquire(txn txnlock.TxnID, r txnlock.Range, md txnlock.Mode) {
	i, j := m.u.cells(r)
	for c := i; c < j; c++ {
		m.set(txn, c, m.mode(txn, c).Max(md))
	}
}

func (m *model) release(txn txnlock.TxnID, r txnlock.Range) {
	i, j := m.u.cells(r)
	for c := i; c < j; c++ {
		m.set(txn, c, 0)
	}
}

// holds is what txn holds: its runs over all cells.
func (m *model) holds(txn txnlock.TxnID) []lockRun {
	return m.runs(0, m.u.ncells(), func(o txnlock.TxnID, _ txnlock.Mode) bool { return o == txn })
}

// chooser is where a driver's choices come from: a seeded generator in the
// randomized test, the fuzzer's bytes in FuzzTreeOps.
type chooser interface{ Intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) Intn(n int) int { return c.r.IntN(n) }

// driver applies random operations to a Tree and to the model and reports
// the first divergence.
type driver struct {
	u     *universe
	m     *model
	t     *Tree
	trace []string // the operations so far, for failure reports
	stats driverStats
	// points: out of 10 ranges picked, how many are points (the rest
	// prefixes and arbitrary ranges). Many points make neighbours likely.
	points int
	shared int // out of 10 modes picked, how many are Shared
}

// driverStats show what a run exercised.
type driverStats struct {
	granted, blocked  int // acquires tried
	released, notHeld int // releases tried
	releaseAll        int
	sharedSegs        int // segments seen with several owners
	maxSegs           int
}

func (s *driverStats) add(o driverStats) {
	s.granted += o.granted
	s.blocked += o.blocked
	s.released += o.released
	s.notHeld += o.notHeld
	s.releaseAll += o.releaseAll
	s.sharedSegs += o.sharedSegs
	s.maxSegs = max(s.maxSegs, o.maxSegs)
}

func newDriver(u *universe) *driver {
	return &driver{u: u, m: newModel(u), t: New(), points: 4, shared: 6}
}

func (d *driver) logf(format string, args ...any) {
	d.trace = append(d.trace, fmt.Sprintf(format, args...))
}

func (d *driver) pickRange(c chooser) txnlock.Range {
	switch k := c.Intn(10); {
	case k < d.points:
		return d.u.points[c.Intn(len(d.u.points))]
	case k < d.points+1:
		return d.u.prefixes[c.Intn(len(d.u.prefixes))]
	default:
		return d.u.pool[c.Intn(len(d.u.pool))]
	}
}

func (d *driver) pickMode(c chooser) txnlock.Mode {
	if c.Intn(10) < d.shared {
		return txnlock.Shared
	}
	return txnlock.Exclusive
}

const driverTxns = 4

// step applies one random operation and checks its result.
func (d *driver) step(c chooser) error {
	txn := txnlock.TxnID(1 + c.Intn(driverTxns))
	switch op := c.Intn(100); {
	case op < 50:
		r, md := d.pickRange(c), d.pickMode(c)
		want := d.m.conflicts(txn, r, md)
		if err := d.checkConflicts(txn, r, md, want); err != nil {
			return err
		}
		if got, want := d.t.Covered(txn, r, md), d.m.covered(txn, r, md); got != want {
			return fmt.Errorf("Covered(%d, %v, %v) = %v, model %v", txn, r, md, got, want)
		}
		if len(want) > 0 {
			d.stats.blocked++
			break
		}
		d.logf("acquire %d %v %v", txn, r, md)
		d.t.Acquire(txn, r, md)
		d.m.acquire(txn, r, md)
		d.stats.granted++
	case op < 70:
		r := d.pickRange(c)
		if c.Intn(3) == 0 { // pick something txn holds, or part of it
			if hs := d.m.holds(txn); len(hs) > 0 {
				h := hs[c.Intn(len(hs))]
				i := h.i + c.Intn(h.j-h.i)
				r = d.u.span(i, i+1+c.Intn(h.j-i))
			}
		}
		d.logf("release %d %v", txn, r)
		var released []txnlock.Range
		err := d.t.Release(txn, r, func(x txnlock.Range) { released = append(released, x) })
		if want := d.m.covered(txn, r, txnlock.Shared); !want {
			if !errors.Is(err, txnlock.ErrNotHeld) || len(released) > 0 {
				return fmt.Errorf("Release(%d, %v) of keys not held = %v, released %v", txn, r, err, released)
			}
			d.stats.notHeld++
			break
		}
		if err != nil || len(released) != 1 || !released[0].Equal(r) {
			return fmt.Errorf("Release(%d, %v) = %v, released %v", txn, r, err, released)
		}
		d.m.release(txn, r)
		d.stats.released++
	case op < 76:
		d.logf("release-all %d", txn)
		want := d.m.runs(0, d.u.ncells(), func(o txnlock.TxnID, _ txnlock.Mode) bool { return o == txn })
		var runs []txnlock.Range // held runs of any mode, touching ones joined
		for _, h := range want {
			if n := len(runs) - 1; n >= 0 && runs[n].End().Compare(d.u.cuts[h.i]) == 0 {
				runs[n] = d.u.span(d.u.cut(runs[n].Start()), h.j)
				continue
			}
			runs = append(runs, d.u.span(h.i, h.j))
		}
		var got []txnlock.Range
		d.t.ReleaseAll(txn, func(x txnlock.Range) { got = append(got, x) })
		if !slices.EqualFunc(got, runs, txnlock.Range.Equal) {
			return fmt.Errorf("ReleaseAll(%d) released %v, model %v", txn, got, runs)
		}
		delete(d.m.held, txn)
		d.stats.releaseAll++
	default:
		r, md := d.pickRange(c), d.pickMode(c)
		if err := d.checkConflicts(txn, r, md, d.m.conflicts(txn, r, md)); err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) checkConflicts(txn txnlock.TxnID, r txnlock.Range, md txnlock.Mode, want []lockRun) error {
	var got []lockRun
	d.t.Conflicts(txn, r, md, func(o txnlock.TxnID, h txnlock.Range, hm txnlock.Mode) bool {
		i, j := d.u.cells(h)
		got = append(got, lockRun{owner: o, i: i, j: j, mode: hm})
		return true
	})
	if !slices.Equal(got, want) {
		return fmt.Errorf("Conflicts(%d, %v, %v) = %v, model %v", txn, r, md, d.runString(got), d.runString(want))
	}
	if len(want) > 0 { // stopping early: exactly the first conflict
		var first []lockRun
		d.t.Conflicts(txn, r, md, func(o txnlock.TxnID, h txnlock.Range, hm txnlock.Mode) bool {
			i, j := d.u.cells(h)
			first = append(first, lockRun{owner: o, i: i, j: j, mode: hm})
			return false
		})
		if len(first) != 1 || first[0] != want[0] {
			return fmt.Errorf("Conflicts(%d, %v, %v) stopped early = %v, model %v", txn, r, md, d.runString(first), d.runString(want[:1]))
		}
	}
	if got := d.t.HasConflict(txn, r, md); got != (len(want) > 0) {
		return fmt.Errorf("HasConflict(%d, %v, %v) = %v, model %v", txn, r, md, got, d.runString(want))
	}
	return nil
}

// check compares everything observable with the model: Holds, TxnCount,
// Len, Ascend, and the internal invariants.
func (d *driver) check() error {
	if err := checkInvariants(d.t); err != nil {
		return err
	}
	d.stats.maxSegs = max(d.stats.maxSegs, d.t.segments())
	d.t.segs.Ascend(func(s *seg) bool {
		if s.nmore != 0 {
			d.stats.sharedSegs++
		}
		return true
	})
	total := 0
	for id := txnlock.TxnID(1); id <= driverTxns; id++ {
		want := d.m.holds(id)
		var got []lockRun
		d.t.Holds(id, func(r txnlock.Range, md txnlock.Mode) bool {
			i, j := d.u.cells(r)
			got = append(got, lockRun{owner: id, i: i, j: j, mode: md})
			return true
		})
		if !slices.Equal(got, want) {
			return fmt.Errorf("Holds(%d) = %v, model %v", id, d.runString(got), d.runString(want))
		}
		if n := d.t.TxnCount(id); n != len(want) {
			return fmt.Errorf("TxnCount(%d) = %d, model %d", id, n, len(want))
		}
		total += len(want)
	}
	if d.t.Len() != total {
		return fmt.Errorf("Len() = %d, model %d", d.t.Len(), total)
	}
	want := d.m.runs(0, d.u.ncells(), func(txnlock.TxnID, txnlock.Mode) bool { return true })
	var got []lockRun
	d.t.Ascend(func(l Lock) bool {
		i, j := d.u.cells(l.Range)
		got = append(got, lockRun{owner: l.Owner, i: i, j: j, mode: l.Mode})
		return true
	})
	if !slices.Equal(got, want) {
		return fmt.Errorf("Ascend = %v, model %v", d.runString(got), d.runString(want))
	}
	return nil
}

func (d *driver) runString(rs []lockRun) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d:%v%v", r.owner, d.u.span(r.i, r.j), r.mode))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (d *driver) fail(t testing.TB, err error) {
	t.Helper()
	tail := d.trace
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	t.Fatalf("%v\nlast operations:\n  %s\nsegments:\n%s", err, strings.Join(tail, "\n  "), segmentString(d.t))
}

// TestModel runs random operation sequences against the model and checks
// every result and, after every operation, the whole observable state.
// 100,000 operations by default; -long runs 10,000,000.
func TestModel(t *testing.T) {
	const seqLen = 1000
	ops := 100_000
	if *long {
		ops = 10_000_000
	}
	if testing.Short() {
		ops = 10_000
	}
	u := newUniverse()
	var stats driverStats
	defer func() {
		t.Logf("universe: %d ranges, %d cells; %d operations: %+v", len(u.pool), u.ncells(), ops, stats)
	}()
	for seq := 0; seq < ops/seqLen; seq++ {
		c := randChooser{rand.New(rand.NewPCG(uint64(seq), 42))}
		d := newDriver(u)
		if seq%3 == 0 {
			d.points, d.shared = 8, 3
		}
		for i := 0; i < seqLen; i++ {
			if err := d.step(c); err != nil {
				d.fail(t, fmt.Errorf("seed %d op %d: %w", seq, i, err))
			}
			if err := d.check(); err != nil {
				d.fail(t, fmt.Errorf("seed %d op %d: %w", seq, i, err))
			}
		}
		stats.add(d.stats)
	}
}
