package main

import (
	"strings"
	"testing"
)

// FuzzParseDelayRule: any input either fails or yields a rule that
// renders back (String) to a form that parses to the same rule.
func FuzzParseDelayRule(f *testing.F) {
	for _, s := range []string{
		"UPDATE sbtest1 SET k=k+1 WHERE id=?=100ms", "0xBE86E8D6561EAF20=100", "x=1.5", "==", "a=b=c", "=", "d=-1s", "d=1h2m",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseDelayRule(s)
		if err != nil {
			return
		}
		if r.Delay < 0 || strings.TrimSpace(r.Digest) == "" {
			t.Fatalf("%q: accepted %+v", s, r)
		}
		r2, err := parseDelayRule(r.String())
		if err != nil {
			t.Fatalf("%q: rendered %q does not parse: %v", s, r.String(), err)
		}
		if r2 != r {
			t.Fatalf("%q: %+v rendered as %q parses to %+v", s, r, r.String(), r2)
		}
	})
}
