package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// csvHeader is the header line of Result.WriteCSV.
var csvHeader = []string{
	"workload", "lock", "threads", "runs", "tps", "qps", "lat_avg_ms", "lat_p95_ms", "lat_max_ms",
	"deadlocks", "timeouts", "locks_per_txn", "spread_pct", "verify_ok",
	"ratio_pct", "ratio_lo_pct", "ratio_hi_pct", "ratio_confidence_pct", "ratio_pairs",
	"qps_median", "qps_lo", "qps_hi",
}

// WriteCSV prints one header line, then one row per cell (lock kind,
// thread count), and nothing else. The ratio columns (Cell.Ratio, in %)
// are empty for the baseline kind, and the interval's with one pair.
func (res *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	for _, c := range res.Cells {
		row := []string{
			string(c.Workload), string(c.Lock), strconv.Itoa(c.Threads), strconv.Itoa(c.Runs),
			f(c.TPS, 2), f(c.QPS, 2), f(ms(c.LatAvg), 3), f(ms(c.LatP95), 3), f(ms(c.LatMax), 3),
			strconv.FormatUint(c.Deadlocks, 10), strconv.FormatUint(c.Timeouts, 10),
			f(c.LocksPerTxn, 2), f(c.SpreadPct, 1), strconv.FormatBool(c.VerifyOK),
		}
		switch r := c.Ratio; {
		case r != nil && r.Pairs > 1:
			row = append(row, f(100*r.Median, 2), f(100*r.Lo, 2), f(100*r.Hi, 2), f(100*r.Confidence, 1), strconv.Itoa(r.Pairs))
		case r != nil:
			row = append(row, f(100*r.Median, 2), "", "", "", "1")
		default:
			row = append(row, "", "", "", "", "")
		}
		row = append(row, f(c.QPSMedian, 2), f(c.QPSLo, 2), f(c.QPSHi, 2))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonResult is the JSON document Result.WriteJSON prints.
type jsonResult struct {
	Options          string       `json:"options"`
	Workload         Workload     `json:"workload"`
	Layout           Layout       `json:"cf_layout"`
	Storage          Storage      `json:"storage"`
	DriverOverheadNs int64        `json:"driver_overhead_ns_per_txn,omitempty"`
	Cells            []Cell       `json:"cells"`
	Runs             []*RunResult `json:"runs"`
}

// WriteJSON prints the result as one JSON document: the options as a
// command line, the cells, and every run.
func (res *Result) WriteJSON(w io.Writer) error {
	doc := jsonResult{
		Options: res.Options.String(), Workload: res.Options.Workload, Layout: res.Options.Layout,
		Storage: res.Options.Storage, DriverOverheadNs: int64(res.DriverOverhead),
		Cells: res.Cells, Runs: res.Runs,
	}
	if doc.Cells == nil {
		doc.Cells = []Cell{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("bench: json: %w", err)
	}
	return nil
}
