package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDurationUnit reads a Go duration ("10s", "1m30s", "500ms") or a
// bare number of units ("10", "2.5").
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

// JoinLocks renders a lock list as the --lock flag takes it: "point,range".
func JoinLocks(ls []LockKind) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = string(l)
	}
	return strings.Join(parts, ",")
}

// JoinInts renders an int list as the --threads flag takes it: "1,2,4".
func JoinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
