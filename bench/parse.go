package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a Go duration ("10s", "1m30s", "500ms") or bare
// seconds ("10", "2.5"), as sysbench's --time takes seconds.
func ParseDuration(s string) (time.Duration, error) { return parseDurationUnit(s, time.Second) }

// parseDurationUnit reads a Go duration or a bare number of units.
func parseDurationUnit(s string, unit time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		ns := f * float64(unit)
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

// ParseIntList reads "1,2,4,8". Every element must be an integer; range
// checks are the options' Validate's job.
func ParseIntList(s string) ([]int, error) {
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

// ParseLockList reads "point,range"; unknown kinds are Validate's job.
func ParseLockList(s string) []LockKind {
	var out []LockKind
	for _, f := range strings.Split(s, ",") {
		out = append(out, LockKind(strings.TrimSpace(f)))
	}
	return out
}

// JoinLocks renders a lock list as ParseLockList reads it.
func JoinLocks(ls []LockKind) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = string(l)
	}
	return strings.Join(parts, ",")
}

// JoinInts renders an int list as ParseIntList reads it.
func JoinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
