package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/txnlock/txnlock"
)

func scanTxn(t *testing.T, td *datadriven.TestData) txnlock.TxnID {
	var v uint64
	td.ScanArgs(t, "txn", &v)
	return txnlock.TxnID(v)
}

func scanCF(t *testing.T, td *datadriven.TestData) txnlock.ColumnFamily {
	var v int32
	td.MaybeScanArgs(t, "cf", &v)
	return txnlock.ColumnFamily(v)
}

// scanRange reads key=K (the point [K]) or range=RANGE.
func scanRange(t *testing.T, td *datadriven.TestData) txnlock.Range {
	if a, ok := td.Arg("range"); ok {
		if len(a.Vals) == 2 {
			// datadriven reads (a,b) as a list of two values.
			return parseRange(t, "("+a.Vals[0]+","+a.Vals[1]+")")
		}
		return parseRange(t, a.SingleVal(t))
	}
	var key string
	td.ScanArgs(t, "key", &key)
	return txnlock.Point([]byte(key))
}

// parseRange parses the bracket notation of the traces (see the package
// doc). A range that covers no key, or whose start is after its end, is
// the zero Range: the trace tests how a manager refuses it.
func parseRange(t *testing.T, s string) txnlock.Range {
	switch {
	case strings.HasPrefix(s, "prefix:"):
		return txnlock.Prefix([]byte(strings.TrimPrefix(s, "prefix:")))
	case s == "invalid":
		return txnlock.Range{}
	case len(s) < 3:
		t.Fatalf("bad range %q", s)
	}
	open, body, closing := s[0], s[1:len(s)-1], s[len(s)-1]
	parts := strings.Split(body, ",")
	switch len(parts) {
	case 1:
		if open != '[' || closing != ']' {
			t.Fatalf("bad range %q: a point is [k]", s)
		}
		return txnlock.Point([]byte(parts[0]))
	case 2:
	default:
		t.Fatalf("bad range %q", s)
	}
	start, end := txnlock.NegInf(), txnlock.PosInf()
	switch a := parts[0]; {
	case a == "-inf":
	case open == '[':
		start = txnlock.BoundBefore([]byte(a))
	default:
		start = txnlock.BoundAfter([]byte(a))
	}
	switch b := parts[1]; {
	case b == "+inf":
	case closing == ']':
		end = txnlock.BoundAfter([]byte(b))
	default:
		end = txnlock.BoundBefore([]byte(b))
	}
	r, err := txnlock.NewRange(start, end)
	if err != nil {
		return txnlock.Range{}
	}
	return r
}

// parseMode reads S or X; anything else is an invalid mode.
func parseMode(s string) txnlock.Mode {
	switch s {
	case "S":
		return txnlock.Shared
	case "X":
		return txnlock.Exclusive
	}
	return txnlock.Mode(7)
}

func parseTimeout(t *testing.T, s string) time.Duration {
	switch s {
	case "nowait":
		return txnlock.NoWait
	case "forever":
		return txnlock.WaitForever
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
