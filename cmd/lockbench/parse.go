package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/txnlock/txnlock/bench"
	"github.com/txnlock/txnlock/internal/flagval"
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

// parseDelayRule reads --delay-rule's "DIGEST=DURATION". The digest text itself contains
// '=' ("k=k+1 WHERE id=?"), so the duration is what follows the last '='.
// The duration is a Go duration or bare milliseconds, as ProxySQL's delay
// column is.
func parseDelayRule(s string) (bench.DelayRule, error) {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 {
		return bench.DelayRule{}, fmt.Errorf("delay rule %q: want DIGEST=DURATION", s)
	}
	d, err := flagval.Duration(s[i+1:], time.Millisecond)
	if err != nil {
		return bench.DelayRule{}, fmt.Errorf("delay rule %q: %v", s, err)
	}
	if d < 0 {
		return bench.DelayRule{}, fmt.Errorf("delay rule %q: negative delay", s)
	}
	digest := strings.TrimSpace(s[:i])
	if digest == "" {
		return bench.DelayRule{}, fmt.Errorf("delay rule %q: empty digest", s)
	}
	return bench.DelayRule{Digest: digest, Delay: d}, nil
}
