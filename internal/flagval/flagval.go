// Package flagval parses and prints the values of the command's and the
// benchmark driver's flags and options that people type: durations with
// or without a unit, and comma-separated lists.
package flagval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration reads a Go duration ("10s", "1m30s", "500ms") or a
// bare number of units ("10", "2.5").
func Duration(s string, unit time.Duration) (time.Duration, error) {
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

// Join renders a list as a list flag takes it: "1,2,4", "point,range".
func Join[T any](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
