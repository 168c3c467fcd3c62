package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/txnlock/txnlock/bench"
)

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
