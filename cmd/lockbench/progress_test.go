package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/txnlock/txnlock/bench"
)

// TestProgressLine: "run i of n" and the time left, first from the plan's
// time per run, then from the pace so far; clear erases the line.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := newProgress(&buf, 2*time.Second)
	p.nowFunc = func() time.Time { return now }
	p.RunStart(1, 4, bench.LockPoint, 8)
	assert.True(t, strings.HasSuffix(buf.String(), "run 1 of 4 (point, 8 threads), 8s left"), buf.String())
	p.RunProgress(0.5)
	assert.True(t, strings.HasSuffix(buf.String(), "run 1 of 4 (point, 8 threads), 7s left"), buf.String())
	now = now.Add(10 * time.Second) // slower than planned: 10 s for half the plan
	p.RunDone(nil)
	p.RunStart(3, 4, bench.LockRange, 8)
	assert.True(t, strings.HasSuffix(buf.String(), "run 3 of 4 (range, 8 threads), 10s left"), buf.String())
	p.clear()
	assert.True(t, strings.HasSuffix(buf.String(), "\r\033[K"))
}

// TestProgressLines: off a terminal, progress is whole lines, the first
// at the plan's start, then at most one an interval.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := newProgressLines(&buf, 2*time.Second, 10*time.Second)
	p.nowFunc = func() time.Time { return now }
	p.RunStart(1, 40, bench.LockPoint, 1)
	assert.Equal(t, "lockbench: run 1 of 40 (point, 1 thread), 1m20s left\n", buf.String())
	now = now.Add(9 * time.Second)
	p.RunProgress(0.5)
	p.RunDone(nil)
	p.RunStart(2, 40, bench.LockRange, 1)
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"), "not yet an interval")
	now = now.Add(time.Second)
	p.RunProgress(0.5)
	assert.Equal(t, 2, strings.Count(buf.String(), "\n"))
	assert.True(t, strings.HasSuffix(buf.String(), "lockbench: run 2 of 40 (range, 1 thread), 4m17s left\n"), buf.String())
	p.clear()
	assert.NotContains(t, buf.String(), "\r")
}

// TestProgressOffTerminal: a plan whose stderr is not a terminal reports
// its progress in lines there.
func TestProgressOffTerminal(t *testing.T) {
	code, _, stderr := cli(t, bench.OpenNoop, "run", "--threads", "1", "--time", "3", "--events", "10", "--per-run", "none", "--driver-overhead", "0")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(stderr, "lockbench: run 1 of 4 (point, 1 thread), "), stderr)
	assert.NotContains(t, stderr, "\r")
}
