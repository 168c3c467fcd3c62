package server

import (
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txnlock/txnlock/cmd/txnlockd/engine"
	"vitess.io/vitess/go/vt/sqlparser"
)

// A digest is one statement shape: the statement's text with every
// literal replaced by ?, as ProxySQL's stats_mysql_query_digest groups
// queries. A prepared statement's text is its digest text with its ?
// placeholders kept. "UPDATE sbtest1 SET k=k+1 WHERE id=5" and the
// prepared "UPDATE sbtest1 SET k=k+1 WHERE id=?" both have the digest
// text "UPDATE sbtest1 SET k=k+? WHERE id=?".
type digest struct {
	text, id string
	delay    time.Duration // from a delay rule

	// mu guards the statistics.
	mu                      sync.Mutex
	count, errors           uint64
	sumTime, minTime, maxTm time.Duration
	rowsAffected, rowsSent  uint64
	first, last             time.Time
}

// maxDigests bounds the table; later shapes share one digest.
const maxDigests = 10000

type digestTable struct {
	parser *sqlparser.Parser
	rules  map[string]time.Duration // by digest text and by id

	// mu guards m.
	mu sync.Mutex
	m  map[string]*digest
}

func (t *digestTable) init(p *sqlparser.Parser, rules []DelayRule) {
	t.parser, t.m, t.rules = p, map[string]*digest{}, map[string]time.Duration{}
	for _, r := range rules {
		d := strings.TrimSpace(r.Digest)
		if !strings.HasPrefix(d, "0x") {
			d = normalize(p, d)
		}
		t.rules[d] = r.Delay
	}
}

// normalize replaces each literal of sql by ?, using vitess' tokenizer.
func normalize(p *sqlparser.Parser, sql string) string {
	tok := p.NewStringTokenizer(sql)
	var b strings.Builder
	last := 0
	for {
		start := tok.Pos
		for start < len(sql) && strings.IndexByte(" \t\r\n", sql[start]) >= 0 {
			start++
		}
		typ, _ := tok.Scan()
		switch typ {
		case 0:
			b.WriteString(sql[last:])
			return strings.TrimSpace(b.String())
		case sqlparser.LEX_ERROR:
			return strings.TrimSpace(sql)
		case sqlparser.INTEGRAL, sqlparser.FLOAT, sqlparser.DECIMAL, sqlparser.STRING, sqlparser.HEXNUM, sqlparser.HEX, sqlparser.BIT_LITERAL, sqlparser.NCHAR_STRING:
			b.WriteString(sql[last:start])
			b.WriteByte('?')
			last = tok.Pos
		}
	}
}

func digestID(text string) string {
	h := fnv.New64a()
	io.WriteString(h, text)
	return fmt.Sprintf("0x%016X", h.Sum64())
}

// get returns the digest of a normalized text.
func (t *digestTable) get(text string) *digest {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.m[text]; ok {
		return d
	}
	if len(t.m) >= maxDigests {
		text = "(other statements)"
		if d, ok := t.m[text]; ok {
			return d
		}
	}
	d := &digest{text: text, id: digestID(text)}
	if delay, ok := t.rules[text]; ok {
		d.delay = delay
	} else if delay, ok := t.rules[d.id]; ok {
		d.delay = delay
	}
	t.m[text] = d
	return d
}

func (d *digest) record(took time.Duration, affected, sent uint64, failed bool) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.count == 0 {
		d.first, d.minTime = now, took
	}
	d.count++
	d.last = now
	d.sumTime += took
	d.minTime = min(d.minTime, took)
	d.maxTm = max(d.maxTm, took)
	d.rowsAffected += affected
	d.rowsSent += sent
	if failed {
		d.errors++
	}
}

// source is the stats_mysql_query_digest table (times in microseconds).
func (t *digestTable) source() source {
	t.mu.Lock()
	list := make([]*digest, 0, len(t.m))
	for _, d := range t.m {
		list = append(list, d)
	}
	t.mu.Unlock()
	slices.SortFunc(list, func(a, b *digest) int { return strings.Compare(a.text, b.text) })
	src := source{cols: []column{{name: "digest"}, {name: "digest_text"}, {name: "count_star", int: true}, {name: "first_seen", int: true}, {name: "last_seen", int: true},
		{name: "sum_time", int: true}, {name: "min_time", int: true}, {name: "max_time", int: true}, {name: "sum_rows_affected", int: true}, {name: "sum_rows_sent", int: true},
		{name: "sum_errors", int: true}, {name: "delay_ms", int: true}}}
	for _, d := range list {
		d.mu.Lock()
		src.rows = append(src.rows, []engine.Value{engine.StrValue(d.id), engine.StrValue(d.text), engine.IntValue(int64(d.count)),
			engine.IntValue(d.first.Unix()), engine.IntValue(d.last.Unix()), engine.IntValue(d.sumTime.Microseconds()),
			engine.IntValue(d.minTime.Microseconds()), engine.IntValue(d.maxTm.Microseconds()), engine.IntValue(int64(d.rowsAffected)),
			engine.IntValue(int64(d.rowsSent)), engine.IntValue(int64(d.errors)), engine.IntValue(d.delay.Milliseconds())})
		d.mu.Unlock()
	}
	return src
}
