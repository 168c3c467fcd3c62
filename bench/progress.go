package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress draws a one-line progress bar (for a terminal: it rewrites the
// line with \r) over a plan of runs. It is an Observer.
type Progress struct {
	W io.Writer // written only with mu held

	// mu guards the state of the bar: the driver's watcher goroutine
	// reports progress while the plan's goroutine starts and ends runs.
	mu struct {
		sync.Mutex
		seq, total int
		lock       LockKind
		threads    int
		start      time.Time // of the plan
	}
}

// NewProgress returns a bar that draws on w.
func NewProgress(w io.Writer) *Progress { return &Progress{W: w} }

// RunStart implements Observer.
func (p *Progress) RunStart(seq, total int, lock LockKind, threads int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq == 1 || p.mu.start.IsZero() {
		p.mu.start = time.Now()
	}
	p.mu.seq, p.mu.total, p.mu.lock, p.mu.threads = seq, total, lock, threads
	p.drawLocked(0)
}

// RunProgress implements Observer.
func (p *Progress) RunProgress(frac float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked(frac)
}

// RunDone implements Observer.
func (p *Progress) RunDone(*RunResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawLocked(1)
}

// Clear erases the bar (before other output, and at the end).
func (p *Progress) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.W, "\r\033[K")
}

const barWidth = 30

// drawLocked redraws the bar for the current run at frac done.
func (p *Progress) drawLocked(frac float64) {
	if p.mu.total == 0 {
		return
	}
	done := (float64(p.mu.seq-1) + frac) / float64(p.mu.total)
	fill := int(done * barWidth)
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	eta := ""
	if el := time.Since(p.mu.start); done > 0.01 {
		eta = " ETA " + (time.Duration(float64(el)/done) - el).Round(time.Second).String()
	}
	fmt.Fprintf(p.W, "\r\033[K[%s] %3.0f%% run %d/%d: %s, %d threads%s", bar, 100*done, p.mu.seq, p.mu.total, p.mu.lock, p.mu.threads, eta)
}
