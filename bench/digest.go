package bench

import (
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// stmtKind is a statement shape: one digest per kind and table, as
// ProxySQL's stats_mysql_query_digest groups queries that differ only in
// their literals.
type stmtKind uint8

// The statements the workloads run.
const (
	stmtBegin stmtKind = iota
	stmtCommit
	stmtPointSelect
	stmtSimpleRange
	stmtSumRange
	stmtOrderRange
	stmtDistinctRange
	stmtUpdateIndex
	stmtUpdateNonIndex
	stmtDelete
	stmtInsert
	stmtInsertAuto
	stmtFullScan
	numStmtKinds
)

// stmtText is each kind's digest text; %d is the table number.
var stmtText = [numStmtKinds]string{
	stmtBegin:          "BEGIN",
	stmtCommit:         "COMMIT",
	stmtPointSelect:    "SELECT c FROM sbtest%d WHERE id=?",
	stmtSimpleRange:    "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?",
	stmtSumRange:       "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?",
	stmtOrderRange:     "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	stmtDistinctRange:  "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c",
	stmtUpdateIndex:    "UPDATE sbtest%d SET k=k+1 WHERE id=?",
	stmtUpdateNonIndex: "UPDATE sbtest%d SET c=? WHERE id=?",
	stmtDelete:         "DELETE FROM sbtest%d WHERE id=?",
	stmtInsert:         "INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)",
	stmtInsertAuto:     "INSERT INTO sbtest%d (k, c, pad) VALUES (?, ?, ?)",
	stmtFullScan:       "SELECT id, k, c, pad FROM sbtest%d",
}

// stmtClass is sysbench's "queries performed" class of each kind.
type stmtClass uint8

const (
	classOther stmtClass = iota // BEGIN, COMMIT
	classRead
	classWrite
)

func (k stmtKind) class() stmtClass {
	switch k {
	case stmtBegin, stmtCommit:
		return classOther
	case stmtPointSelect, stmtSimpleRange, stmtSumRange, stmtOrderRange, stmtDistinctRange, stmtFullScan:
		return classRead
	}
	return classWrite
}

// perTable reports whether the kind names a table (BEGIN and COMMIT do not).
func (k stmtKind) perTable() bool { return k != stmtBegin && k != stmtCommit }

// stmtDigest names one statement shape on one table (Table 0 for BEGIN and
// COMMIT).
type stmtDigest struct {
	Kind  stmtKind
	Table int
}

// Text is the digest text, e.g. "UPDATE sbtest1 SET k=k+1 WHERE id=?".
func (d stmtDigest) Text() string {
	if !d.Kind.perTable() {
		return stmtText[d.Kind]
	}
	return fmt.Sprintf(stmtText[d.Kind], d.Table)
}

// ID is the digest id as ProxySQL prints it: a 64-bit hash of the text,
// "0x" and 16 upper-case hex digits.
func (d stmtDigest) ID() string {
	h := fnv.New64a()
	io.WriteString(h, d.Text())
	return fmt.Sprintf("0x%016X", h.Sum64())
}

// allDigests lists every digest a run over the given tables can produce.
func allDigests(tables int) []stmtDigest {
	var ds []stmtDigest
	for k := range numStmtKinds {
		if !k.perTable() {
			ds = append(ds, stmtDigest{Kind: k})
			continue
		}
		for t := 1; t <= tables; t++ {
			ds = append(ds, stmtDigest{Kind: k, Table: t})
		}
	}
	return ds
}

// DelayRule delays the statements of one digest, like a ProxySQL
// mysql_query_rules row with a delay: Digest is a digest id ("0x...") or
// a digest text.
type DelayRule struct {
	Digest string
	Delay  time.Duration
}

// String renders "DIGEST=DURATION", the form lockbench's --delay-rule takes.
func (r DelayRule) String() string { return r.Digest + "=" + r.Delay.String() }

// delayTable is the delay of every digest, indexed [table][kind]; nil when
// no statement is delayed.
type delayTable [][numStmtKinds]time.Duration

// newDelayTable resolves the global delay and the rules for a run over
// tables. A rule that names no digest of the run is an error that lists
// the digests it could have named.
func newDelayTable(global time.Duration, rules []DelayRule, tables int) (delayTable, error) {
	if global == 0 && len(rules) == 0 {
		return nil, nil
	}
	dt := make(delayTable, tables+1)
	for t := range dt {
		for k := range numStmtKinds {
			dt[t][k] = global
		}
	}
	digests := allDigests(tables)
	for _, r := range rules {
		found := false
		for _, d := range digests {
			if strings.EqualFold(r.Digest, d.ID()) || r.Digest == d.Text() {
				dt[d.Table][d.Kind] = r.Delay
				found = true
			}
		}
		if !found {
			var known []string
			for _, d := range digests {
				known = append(known, d.ID()+" "+d.Text())
			}
			return nil, fmt.Errorf("delay rule %q names no statement of this run; digests:\n  %s", r.Digest, strings.Join(known, "\n  "))
		}
	}
	return dt, nil
}

// delay returns the delay of d (0 when dt is nil).
func (dt delayTable) delay(k stmtKind, table int) time.Duration {
	if dt == nil || table >= len(dt) {
		return 0
	}
	return dt[table][k]
}

// digestCell accumulates one digest's statistics in one thread.
type digestCell struct {
	durationStats
	rows uint64
}

func (c *digestCell) add(d time.Duration, rows int) {
	c.durationStats.add(d)
	c.rows += uint64(max(rows, 0))
}

func (c *digestCell) merge(o digestCell) {
	c.durationStats.merge(o.durationStats)
	c.rows += o.rows
}

// digestStats is one thread's statistics, indexed [table][kind].
type digestStats [][numStmtKinds]digestCell

func newDigestStats(tables int) digestStats { return make(digestStats, tables+1) }

func (s digestStats) merge(o digestStats) {
	for t := range min(len(s), len(o)) {
		for k := range numStmtKinds {
			s[t][k].merge(o[t][k])
		}
	}
}

// DigestStat is one row of the digest statistics table (ProxySQL's
// stats_mysql_query_digest): every statement with that digest that ran,
// whether its transaction committed or not. Times include the delay.
type DigestStat struct {
	Digest string        `json:"digest"`
	Text   string        `json:"digest_text"`
	Count  uint64        `json:"count_star"`
	Sum    time.Duration `json:"sum_time_ns"`
	Min    time.Duration `json:"min_time_ns"`
	Max    time.Duration `json:"max_time_ns"`
	Rows   uint64        `json:"rows"` // rows sent or affected
}

// rows lists the digests that ran, by count (most first), then text.
func (s digestStats) rows() []DigestStat {
	var out []DigestStat
	for t := range s {
		for k := range numStmtKinds {
			c := s[t][k]
			if c.n == 0 {
				continue
			}
			d := stmtDigest{Kind: k, Table: t}
			out = append(out, DigestStat{Digest: d.ID(), Text: d.Text(), Count: c.n, Sum: c.sum, Min: c.min, Max: c.max, Rows: c.rows})
		}
	}
	slices.SortFunc(out, func(a, b DigestStat) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Text, b.Text)
	})
	return out
}

// writeDigestStats prints the digest statistics as ProxySQL does: times in
// microseconds.
func writeDigestStats(w io.Writer, stats []DigestStat) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "digest\tdigest_text\tcount_star\tsum_time_us\tmin_time_us\tmax_time_us\trows\t\n")
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", s.Digest, s.Text, s.Count,
			s.Sum.Microseconds(), s.Min.Microseconds(), s.Max.Microseconds(), s.Rows)
	}
	return tw.Flush()
}
