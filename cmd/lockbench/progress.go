package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/txnlock/txnlock/bench"
)

// progress draws one line on a terminal, rewritten in place with \r, over
// a plan of runs: "run 3 of 32 (range, 4 threads), 1m20s left". It is a
// bench.Observer.
type progress struct {
	w       io.Writer     // written only with mu held
	perRun  time.Duration // the plan's time per run, for the first estimate
	nowFunc func() time.Time

	// mu guards the state of the line: the driver's watcher goroutine
	// reports progress while the plan's goroutine starts and ends runs.
	mu struct {
		sync.Mutex
		seq, total int
		lock       bench.LockKind
		threads    int
		start      time.Time // of the plan
	}
}

// newProgress returns a progress line on w for runs of perRun each.
func newProgress(w io.Writer, perRun time.Duration) *progress {
	return &progress{w: w, perRun: perRun, nowFunc: time.Now}
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

// clear erases the line (before other output, and at the end).
func (p *progress) clear() {
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
	if el := p.nowFunc().Sub(p.mu.start); p.mu.seq > 1 {
		left = time.Duration(float64(el)/done) - el
	}
	fmt.Fprintf(p.w, "\r\033[Krun %d of %d (%s, %d threads), %s left", p.mu.seq, p.mu.total, p.mu.lock, p.mu.threads, left.Round(time.Second))
}
