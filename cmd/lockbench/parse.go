package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/txnlock/txnlock/bench"
)

// parseDuration reads a Go duration ("10s", "1m30s", "500ms") or bare
// seconds ("10", "2.5"), as sysbench's --time takes seconds.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		ns := f * float64(time.Second)
		if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return time.Duration(ns), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (10s, 500ms) nor a number", s)
	}
	return d, nil
}

// parseIntList reads "1,2,4,8". Every element must be an integer; range
// checks are the options' Validate's job.
func parseIntList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseLockList reads "point,range"; unknown kinds are Validate's job.
func parseLockList(s string) []bench.LockKind {
	var out []bench.LockKind
	for _, f := range strings.Split(s, ",") {
		out = append(out, bench.LockKind(strings.TrimSpace(f)))
	}
	return out
}
