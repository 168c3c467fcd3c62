package locktree

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/ddtest"
)

// TestScenarios runs the scenario files in testdata. Commands:
//
//	acquire txn=<id> mode=<S|X>   one range per input line; each is granted
//	                              if nothing conflicts, else the conflicts
//	                              are printed and nothing changes
//	conflicts txn=<id> mode=<S|X> one range per line: its conflicts
//	covered txn=<id> mode=<S|X>   one range per line: Covered
//	release txn=<id>              one range per line: Release
//	release-all txn=<id>          ReleaseAll
//	holds txn=<id>                Holds
//	dump                          Ascend, then the segments
//
// Ranges are written as Range.String prints them: "[a, b)", "(a, +inf)",
// "(-inf, c]", "[k]", with \xNN escapes and "" for the empty key; "prefix p"
// is txnlock.Prefix(p). Each run checks the tree's invariants after every
// command.
func TestScenarios(t *testing.T) {
	ddtest.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := New()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := runCommand(t, tr, d)
			if err := checkInvariants(tr); err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			return out
		})
	})
}

func runCommand(t *testing.T, tr *Tree, d *datadriven.TestData) string {
	var txn txnlock.TxnID
	if d.HasArg("txn") {
		var id uint64
		d.ScanArgs(t, "txn", &id)
		txn = txnlock.TxnID(id)
	}
	var mode txnlock.Mode
	if d.HasArg("mode") {
		var m string
		d.ScanArgs(t, "mode", &m)
		mode = parseMode(t, m)
	}
	var sb strings.Builder
	switch d.Cmd {
	case "acquire":
		for _, r := range parseRanges(t, d.Input) {
			var blocked []string
			tr.Conflicts(txn, r, mode, func(o txnlock.TxnID, h txnlock.Range, hm txnlock.Mode) bool {
				blocked = append(blocked, fmt.Sprintf("%d:%v %v", uint64(o), h, hm))
				return true
			})
			if len(blocked) > 0 {
				fmt.Fprintf(&sb, "%v %v: blocked by %s\n", r, mode, strings.Join(blocked, ", "))
				continue
			}
			covered := tr.Covered(txn, r, mode)
			tr.Acquire(txn, r, mode)
			if covered {
				fmt.Fprintf(&sb, "%v %v: granted (already covered)\n", r, mode)
			} else {
				fmt.Fprintf(&sb, "%v %v: granted\n", r, mode)
			}
		}
		writeHolds(&sb, tr, txn)
	case "conflicts":
		for _, r := range parseRanges(t, d.Input) {
			fmt.Fprintf(&sb, "%v %v:", r, mode)
			n := 0
			tr.Conflicts(txn, r, mode, func(o txnlock.TxnID, h txnlock.Range, hm txnlock.Mode) bool {
				fmt.Fprintf(&sb, " %d:%v %v", uint64(o), h, hm)
				n++
				return true
			})
			if n == 0 {
				sb.WriteString(" none")
			}
			sb.WriteString("\n")
		}
	case "covered":
		for _, r := range parseRanges(t, d.Input) {
			fmt.Fprintf(&sb, "%v %v: %v\n", r, mode, tr.Covered(txn, r, mode))
		}
	case "release":
		for _, r := range parseRanges(t, d.Input) {
			if err := tr.Release(txn, r, func(x txnlock.Range) { fmt.Fprintf(&sb, "released %v\n", x) }); err != nil {
				fmt.Fprintf(&sb, "%v: %v\n", r, err)
			}
		}
		writeHolds(&sb, tr, txn)
	case "release-all":
		tr.ReleaseAll(txn, func(x txnlock.Range) { fmt.Fprintf(&sb, "released %v\n", x) })
		writeHolds(&sb, tr, txn)
	case "holds":
		writeHolds(&sb, tr, txn)
	case "dump":
		writeDump(&sb, tr)
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	return sb.String()
}

func writeHolds(sb *strings.Builder, tr *Tree, txn txnlock.TxnID) {
	fmt.Fprintf(sb, "txn %d holds:", uint64(txn))
	tr.Holds(txn, func(r txnlock.Range, m txnlock.Mode) bool {
		fmt.Fprintf(sb, " %v %v", r, m)
		return true
	})
	if tr.TxnCount(txn) == 0 {
		sb.WriteString(" nothing")
	}
	sb.WriteString("\n")
}

func writeDump(sb *strings.Builder, tr *Tree) {
	sb.WriteString("locks:\n")
	tr.Ascend(func(l Lock) bool {
		fmt.Fprintf(sb, "  %d: %v %v\n", uint64(l.Owner), l.Range, l.Mode)
		return true
	})
	sb.WriteString("segments:\n")
	for _, line := range strings.Split(strings.TrimSuffix(segmentString(tr), "\n"), "\n") {
		if line != "" {
			sb.WriteString("  " + line + "\n")
		}
	}
	fmt.Fprintf(sb, "len=%d segments=%d\n", tr.Len(), tr.segments())
}

func parseMode(t *testing.T, s string) txnlock.Mode {
	switch s {
	case "S":
		return txnlock.Shared
	case "X":
		return txnlock.Exclusive
	}
	t.Fatalf("unknown mode %q", s)
	return 0
}

func parseRanges(t *testing.T, input string) []txnlock.Range {
	var rs []txnlock.Range
	for _, line := range strings.Split(input, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			rs = append(rs, parseRange(t, line))
		}
	}
	return rs
}

// parseRange reads a range in Range.String's notation, or "prefix p".
func parseRange(t *testing.T, s string) txnlock.Range {
	t.Helper()
	if p, ok := strings.CutPrefix(s, "prefix "); ok {
		return txnlock.Prefix(parseKey(t, p))
	}
	if len(s) < 3 {
		t.Fatalf("bad range %q", s)
	}
	open, close, body := s[0], s[len(s)-1], s[1:len(s)-1]
	a, b, two := strings.Cut(body, ", ")
	if !two {
		if open != '[' || close != ']' {
			t.Fatalf("bad point %q", s)
		}
		return txnlock.Point(parseKey(t, a))
	}
	start, end := txnlock.NegInf(), txnlock.PosInf()
	switch {
	case a == "-inf":
	case open == '[':
		start = txnlock.BoundBefore(parseKey(t, a))
	default:
		start = txnlock.BoundAfter(parseKey(t, a))
	}
	switch {
	case b == "+inf":
	case close == ']':
		end = txnlock.BoundAfter(parseKey(t, b))
	default:
		end = txnlock.BoundBefore(parseKey(t, b))
	}
	r, err := txnlock.NewRange(start, end)
	if err != nil {
		t.Fatalf("range %q: %v", s, err)
	}
	return r
}

// parseKey reads a key as FormatKey prints it.
func parseKey(t *testing.T, s string) []byte {
	if s == `""` {
		return []byte{}
	}
	var k []byte
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], `\x`) && i+4 <= len(s):
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("key %q: %v", s, err)
			}
			k = append(k, byte(v))
			i += 3
		case s[i] == '\\' && i+1 < len(s):
			k = append(k, s[i+1])
			i++
		default:
			k = append(k, s[i])
		}
	}
	return k
}
