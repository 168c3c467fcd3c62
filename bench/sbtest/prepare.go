package sbtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/txnlock/txnlock"
)

// randDigits is sysbench's value shape: groups of 11 random digits joined
// by '-'.
func randDigits(rng *rand.Rand, groups int) string {
	b := make([]byte, 0, groups*12)
	for g := range groups {
		if g > 0 {
			b = append(b, '-')
		}
		for range 11 {
			b = append(b, byte('0'+rng.IntN(10)))
		}
	}
	return string(b)
}

// RandomC returns a value for c in sysbench's shape (119 bytes).
func RandomC(rng *rand.Rand) string { return randDigits(rng, 10) }

// RandomPad returns a value for pad in sysbench's shape (59 bytes).
func RandomPad(rng *rand.Rand) string { return randDigits(rng, 5) }

// prepareBatch is how many rows go in one write batch.
const prepareBatch = 1000

// Prepare loads TableSize rows into every table, as sysbench prepare does:
// ids 1..TableSize, k uniform in [1, TableSize], c and pad in sysbench's
// shapes (deterministic: table n uses seed n). It writes through plain
// batches without locks, so run it before any transaction; it fails with
// ErrNotEmpty if a table has rows. It ends with a flush, so the runs that
// follow read from sstables, not a huge memtable.
func (db *DB) Prepare(ctx context.Context) error {
	if db.closed.Load() {
		return &opError{op: "prepare", err: ErrClosed}
	}
	snap, err := db.tdb.NewSnapshot()
	if err != nil {
		return err
	}
	for _, t := range db.tables[1:] {
		_, _, found, err := snap.Last(t.pk, txnlock.Prefix(t.pkPrefix))
		if err == nil && found {
			err = &opError{op: fmt.Sprintf("prepare sbtest%d", t.n), err: ErrNotEmpty}
		}
		if err != nil {
			snap.Close()
			return err
		}
	}
	snap.Close()
	n := int64(db.opts.TableSize)
	wb := db.tdb.NewWriteBatch()
	defer wb.Close()
	for _, t := range db.tables[1:] {
		rng := rand.New(rand.NewPCG(uint64(t.n), 12345))
		for id := int64(1); id <= n; id++ {
			r := Row{ID: id, K: 1 + rng.Int64N(n), C: RandomC(rng), Pad: RandomPad(rng)}
			if err := wb.Put(t.pk, pkKey(t.pkPrefix, id), encodeRow(r)); err != nil {
				return err
			}
			if t.hasSK {
				if err := wb.Put(t.sk, skKey(t.skPrefix, r.K, id), nil); err != nil {
					return err
				}
			}
			if wb.Len() >= prepareBatch || id == n {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := wb.Commit(false); err != nil {
					return err
				}
			}
		}
		t.aiMu.Lock()
		t.aiNext = max(t.aiNext, n+1)
		t.aiMu.Unlock()
		for cur := t.aiAtomic.Load(); cur < n && !t.aiAtomic.CompareAndSwap(cur, n); cur = t.aiAtomic.Load() {
		}
	}
	return db.pdb.Flush()
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Rows      int64    // PK rows, all tables
	SKEntries int64    // SK entries, all tables
	Missing   int      // rows without their SK entry
	Extra     int      // SK entries without their row (or with another k)
	Problems  []string // the first few problems, for humans
}

// OK reports whether the tables are consistent.
func (r VerifyReport) OK() bool { return r.Missing == 0 && r.Extra == 0 && len(r.Problems) == 0 }

// String renders the report on one line.
func (r VerifyReport) String() string {
	return fmt.Sprintf("rows=%d sk_entries=%d missing=%d extra=%d problems=%d", r.Rows, r.SKEntries, r.Missing, r.Extra, len(r.Problems))
}

const maxProblems = 10

// Verify checks, in one consistent snapshot of the committed data, that
// every row decodes and has exactly its SK entry (k, id) and that every SK
// entry belongs to a row with that k. It returns ErrInconsistent (with the
// report) if not. Ids are keys, so they cannot repeat.
func (db *DB) Verify() (VerifyReport, error) {
	var rep VerifyReport
	if db.closed.Load() {
		return rep, &opError{op: "verify", err: ErrClosed}
	}
	snap, err := db.tdb.NewSnapshot()
	if err != nil {
		return rep, err
	}
	defer snap.Close()
	problem := func(format string, args ...any) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		}
	}
	for _, t := range db.tables[1:] {
		want := make(map[string]struct{})
		err := snap.Scan(t.pk, txnlock.Prefix(t.pkPrefix), func(k, v []byte) bool {
			rep.Rows++
			if len(k) != len(t.pkPrefix)+8 {
				problem("sbtest%d: PK key %x has the wrong length", t.n, k)
				return true
			}
			id := readInt(k[len(t.pkPrefix):])
			r, err := decodeRow(id, v)
			if err != nil {
				problem("sbtest%d: %v", t.n, strings.TrimPrefix(err.Error(), "sbtest: "))
				return true
			}
			if t.hasSK {
				want[string(skKey(t.skPrefix, r.K, id))] = struct{}{}
			}
			return true
		})
		if err != nil {
			return rep, err
		}
		if !t.hasSK {
			continue
		}
		err = snap.Scan(t.sk, txnlock.Prefix(t.skPrefix), func(k, v []byte) bool {
			rep.SKEntries++
			if _, ok := want[string(k)]; !ok {
				rep.Extra++
				problem("sbtest%d: SK entry %x has no row", t.n, k)
				return true
			}
			if len(v) != 0 || !bytes.HasPrefix(k, t.skPrefix) {
				problem("sbtest%d: SK entry %x is malformed", t.n, k)
			}
			delete(want, string(k))
			return true
		})
		if err != nil {
			return rep, err
		}
		rep.Missing += len(want)
		for k := range want {
			problem("sbtest%d: row %d has no SK entry", t.n, readInt([]byte(k)[len(t.skPrefix)+8:]))
			break
		}
	}
	if !rep.OK() {
		return rep, &opError{op: "verify", err: fmt.Errorf("%w: %v: %v", ErrInconsistent, rep, rep.Problems)}
	}
	return rep, nil
}
