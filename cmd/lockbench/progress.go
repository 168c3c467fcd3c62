package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/txnlock/txnlock/bench"
)

// progress reports a plan of runs on stderr: "run 3 of 32 (range, 4
// threads), 1m20s left". On a terminal it is one line, rewritten in place
// with \r at every step; elsewhere (a file, a pipe, a CI log) it is a
// line of its own at the plan's first step and then at most once an
// interval. It is a bench.Observer.
type progress struct {
	w       io.Writer     // written only with mu held
	perRun  time.Duration // the plan's time per run, for the first estimate
	every   time.Duration // 0: a terminal line; else the interval between lines
	nowFunc func() time.Time

	// mu guards the state of the line: the driver's watcher goroutine
	// reports progress while the plan's goroutine starts and ends runs.
	mu struct {
		sync.Mutex
		seq, total int
		lock       bench.LockKind
		threads    int
		start      time.Time // of the plan
		printed    time.Time // of the last line, with every > 0
	}
}

// progressEvery is the interval between progress lines off a terminal.
const progressEvery = 10 * time.Second

// newProgress returns a progress line on w, a terminal, for runs of
// perRun each.
func newProgress(w io.Writer, perRun time.Duration) *progress {
	return &progress{w: w, perRun: perRun, nowFunc: time.Now}
}

// newProgressLines returns progress that writes a line on w at most once
// every interval, for runs of perRun each.
func newProgressLines(w io.Writer, perRun, every time.Duration) *progress {
	return &progress{w: w, perRun: perRun, every: every, nowFunc: time.Now}
}

// RunStart implements bench.Observer.
func (p *progress) RunStart(seq, total int, lock bench.LockKind, threads int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.start.IsZero() {
		p.mu.start = p.nowFunc()
	}
	p.mu.seq, p.mu.total, p.mu.lock, p.mu.threads = seq, total, lock, threads
	p.drawLocked(0)
}

// RunProgress implements bench.Observer.
func (p *progress) RunProgress(frac float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked(frac)
}

// RunDone implements bench.Observer.
func (p *progress) RunDone(*bench.RunResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked(1)
}

// clear erases the terminal line (before other output, and at the end).
func (p *progress) clear() {
	if p.every > 0 {
		return // lines stay
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K")
}

// drawLocked redraws the line for the current run at frac done. The time
// left is the plan's time per run times the runs left during the first
// run, and then the pace so far (which includes each run's table
// preparation).
func (p *progress) drawLocked(frac float64) {
	if p.mu.total == 0 {
		return
	}
	done := (float64(p.mu.seq-1) + frac) / float64(p.mu.total)
	left := time.Duration((1 - done) * float64(p.mu.total) * float64(p.perRun))
	now := p.nowFunc()
	if el := now.Sub(p.mu.start); p.mu.seq > 1 {
		left = time.Duration(float64(el)/done) - el
	}
	threads := fmt.Sprintf("%d threads", p.mu.threads)
	if p.mu.threads == 1 {
		threads = "1 thread"
	}
	msg := fmt.Sprintf("run %d of %d (%s, %s), %s left", p.mu.seq, p.mu.total, p.mu.lock, threads, left.Round(time.Second))
	if p.every == 0 {
		fmt.Fprintf(p.w, "\r\033[K%s", msg)
		return
	}
	if !p.mu.printed.IsZero() && now.Sub(p.mu.printed) < p.every {
		return
	}
	p.mu.printed = now
	fmt.Fprintf(p.w, "lockbench: %s\n", msg)
}
