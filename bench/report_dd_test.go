package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestReports renders the reports of hand-made runs (testdata/reports):
//
//	runs locks=point,range threads=1,100 [pairs=1] [workload=...] [overhead=800ns]
//	<lock> <threads> txns=N lat=D [deadlocks=N] [timeouts=N] [locks=N] [bad]
//	----
//	compare | csv | lines | report seq=N
//
// Each run lasts one second, so tps is txns, and qps is txns times the
// workload's queries per transaction.
func TestReports(t *testing.T) {
	var res *Result
	datadriven.RunTest(t, "testdata/reports", func(t *testing.T, d *datadriven.TestData) string {
		var buf bytes.Buffer
		switch d.Cmd {
		case "runs":
			res = parseRuns(t, d)
			return ""
		case "compare":
			res.WriteComparison(&buf)
		case "csv":
			if err := res.WriteCSV(&buf); err != nil {
				return err.Error()
			}
		case "lines":
			for _, r := range res.Runs {
				r.WriteLine(&buf)
			}
		case "report":
			var seq int
			d.ScanArgs(t, "seq", &seq)
			res.Runs[seq-1].WriteReport(&buf)
		default:
			d.Fatalf(t, "unknown command %s", d.Cmd)
		}
		return buf.String()
	})
}

func parseRuns(t *testing.T, d *datadriven.TestData) *Result {
	var locks, threads, workload, overhead string
	d.ScanArgs(t, "locks", &locks)
	d.ScanArgs(t, "threads", &threads)
	d.MaybeScanArgs(t, "workload", &workload)
	d.MaybeScanArgs(t, "overhead", &overhead)
	opts := Options{Workload: Workload(workload), Time: time.Second}
	d.MaybeScanArgs(t, "pairs", &opts.Pairs)
	for _, l := range strings.Split(locks, ",") {
		opts.Locks = append(opts.Locks, LockKind(l))
	}
	for _, f := range strings.Split(threads, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		opts.Threads = append(opts.Threads, n)
	}
	var err error
	opts.EnsureDefaults()
	res := &Result{Options: opts}
	if overhead != "" {
		if res.DriverOverhead, err = time.ParseDuration(overhead); err != nil {
			d.Fatalf(t, "%v", err)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			d.Fatalf(t, "bad run line %q", line)
		}
		th, _ := strconv.Atoi(f[1])
		r := &RunResult{Workload: opts.Workload, Lock: LockKind(f[0]), Threads: th, Seq: i + 1, Elapsed: time.Second, Verify: VerifyReport{Rows: 10000}}
		locksPer := 3.0
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseUint(v, 10, 64)
			switch k {
			case "txns":
				r.Txns = n
			case "lat":
				lat, err := time.ParseDuration(v)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				r.LatMin, r.LatAvg, r.LatP95, r.LatMax = lat/2, lat, 2*lat, 10*lat
			case "deadlocks":
				r.Deadlocks = n
			case "timeouts":
				r.Timeouts = n
			case "locks":
				locksPer, _ = strconv.ParseFloat(v, 64)
			case "bad":
				r.Verify.Problems = []string{"sbtest1: SK entry has no row"}
			default:
				d.Fatalf(t, "unknown run field %q", k)
			}
		}
		switch opts.Workload {
		case OLTPWriteOnly:
			r.Writes, r.Other = 4*r.Txns, 2*r.Txns
		case OLTPReadWrite:
			r.Reads, r.Writes, r.Other = 14*r.Txns, 4*r.Txns, 2*r.Txns
		case OLTPUpdateNonIndex:
			r.Writes = r.Txns
		case OLTPPointSelect:
			r.Reads = r.Txns
		}
		r.LatSum = time.Duration(r.Txns) * r.LatAvg
		r.LockRequests = uint64(locksPer * float64(r.Txns))
		r.EventsAvg = float64(r.Txns) / float64(th)
		r.ExecAvg = 1
		res.Runs = append(res.Runs, r)
	}
	res.Cells = summarize(res.Runs, opts.Locks, opts.Threads)
	return res
}
