package contract

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/txnlock/txnlock"

	"github.com/txnlock/txnlock/internal/detect"
)

// managerBackend drives a txnlock.Manager: each Lock call runs on its own
// goroutine, and the backend follows a call that waits through three
// signals from that goroutine, in the order it sends them: the manager's
// queued hook, the detector's report (Block, and Check if Block asked for
// one) and the clock's timer for its timeout. The harness's goroutine is
// the only one that reads the fields below.
type managerBackend struct {
	m     txnlock.Manager
	clock txnlock.Clock
	opts  Options
	// det: every wait reports to the detector before it sleeps.
	det bool
	// queued, reported and armed carry the signals of the one Lock call
	// being issued (other calls are asleep by then): the transaction
	// that queued, the transaction whose report is done, a timer made.
	// They are unbuffered: a call that queued cannot return before Lock
	// has taken its signals, so Lock never mistakes it for one that
	// finished at once, and no signal is left over for the next call.
	queued   chan txnlock.TxnID
	reported chan txnlock.TxnID
	armed    chan struct{}
	waiting  []*call // in the order they were issued
	closed   bool
}

// call is a waiting Lock call.
type call struct {
	id      int
	txn     txnlock.TxnID
	due     time.Time // when its timeout fires, if timed
	timed   bool
	mustEnd bool // cancelled, or the manager closed
	cancel  context.CancelFunc
	done    chan error
}

// newManagerBackend returns a Backend that drives the manager newManager
// builds from cfg (with cfg's clock, detector and hook replaced by the
// backend's, which pass through to them).
func newManagerBackend(cfg Config, newManager func(Config) (txnlock.Manager, error)) (Backend, error) {
	b := &managerBackend{
		clock:    cfg.Clock,
		opts:     cfg.Options,
		queued:   make(chan txnlock.TxnID),
		reported: make(chan txnlock.TxnID),
		armed:    make(chan struct{}),
	}
	mcfg := cfg
	mcfg.Clock = announcingClock{Clock: cfg.Clock, armed: b.armed}
	mcfg.Queued = func(txn txnlock.TxnID) { b.queued <- txn }
	var g detect.Graph // the detector's, once the manager attached
	if cfg.Detector != nil {
		b.det = true
		mcfg.Detector = detect.Wrap(cfg.Detector, func(dg detect.Graph) detect.Graph {
			g = dg
			return reportingGraph{Graph: dg, reported: b.reported}
		})
	}
	m, err := newManager(mcfg)
	if err != nil {
		return nil, err
	}
	if g != nil {
		if d := g.DetectDelay(); d > 0 {
			m.Close()
			return nil, fmt.Errorf("a detector with a DetectDelay (%v) reports waits on a timer: not supported", d)
		}
	}
	b.m = m
	return b, nil
}

func (b *managerBackend) Lock(id int, req txnlock.Request, kind Ctx) (bool, error) {
	ctx, cancel := context.WithCancel(context.Background())
	switch kind {
	case CtxCancelled:
		cancel()
	case CtxNil:
		ctx = nil
	}
	c := &call{id: id, txn: req.Txn, cancel: cancel, done: make(chan error, 1)}
	c.due, c.timed = deadline(b.clock.Now(), req, b.opts.LockTimeout)
	go func() { c.done <- b.m.Lock(ctx, req) }()
	select {
	case err := <-c.done:
		cancel()
		return true, err
	case txn := <-b.queued:
		if txn != req.Txn {
			panic(fmt.Sprintf("contract: %v queued while %v was being issued", txn, req.Txn))
		}
	}
	if b.det {
		if txn := <-b.reported; txn != req.Txn {
			panic(fmt.Sprintf("contract: %v reported its wait while %v was being issued", txn, req.Txn))
		}
	}
	if c.timed {
		<-b.armed
	}
	// The detector may have chosen the request as its victim.
	if !b.shown(b.m.Status(), c) {
		err := <-c.done
		cancel()
		return true, err
	}
	b.waiting = append(b.waiting, c)
	return false, nil
}

// shown reports whether s shows c waiting.
func (b *managerBackend) shown(s txnlock.Status, c *call) bool {
	return slices.ContainsFunc(s.Waits, func(w txnlock.WaitStatus) bool { return w.Txn == c.txn })
}

func (b *managerBackend) Cancel(id int) {
	for _, c := range b.waiting {
		if c.id == id {
			c.cancel()
			c.mustEnd = true
		}
	}
}

func (b *managerBackend) Unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	return b.m.Unlock(txn, cf, r)
}

func (b *managerBackend) UnlockAll(txn txnlock.TxnID) error { return b.m.UnlockAll(txn) }

func (b *managerBackend) AddColumnFamily(cf txnlock.ColumnFamily) error {
	return b.m.AddColumnFamily(cf)
}

func (b *managerBackend) DropColumnFamily(cf txnlock.ColumnFamily) error {
	return b.m.DropColumnFamily(cf)
}

func (b *managerBackend) Status() txnlock.Status { return b.m.Status() }

func (b *managerBackend) Stats() txnlock.Stats { return b.m.Stats() }

func (b *managerBackend) Close() error {
	err := b.m.Close()
	if err == nil {
		b.closed = true
		for _, c := range b.waiting {
			c.mustEnd = true // failed with ErrClosed
		}
	}
	return err
}

// Settle awaits the calls that must finish: those cancelled or failed by
// Close, those whose deadline the clock passed, and those that Status no
// longer shows (granted, or failed by the detector). A call that finished
// may have granted others on its way out (a waiter that leaves re-checks
// the queue behind it), so Settle looks again until nothing changes.
func (b *managerBackend) Settle() []Outcome {
	var out []Outcome
	for {
		now := b.clock.Now()
		s := b.m.Status()
		n := len(out)
		b.waiting = slices.DeleteFunc(b.waiting, func(c *call) bool {
			if !c.mustEnd && !(c.timed && !now.Before(c.due)) && b.shown(s, c) {
				return false
			}
			err := <-c.done
			c.cancel()
			out = append(out, Outcome{ID: c.id, Err: err})
			return true
		})
		if len(out) == n {
			return out
		}
	}
}

func (b *managerBackend) Stop() {
	if !b.closed {
		_ = b.Close()
	}
	b.Settle()
}

// announcingClock is the manual clock as a manager sees it: each timer it
// makes is announced on armed, so that the clock moves only once a
// waiting request's timeout is armed (the waiter makes it after it
// queued, on its own goroutine).
type announcingClock struct {
	txnlock.Clock
	armed chan<- struct{}
}

func (c announcingClock) NewTimer(d time.Duration) txnlock.Timer {
	t := c.Clock.NewTimer(d)
	c.armed <- struct{}{}
	return t
}

// reportingGraph passes every call through to the detector, and sends on
// reported the transaction of each wait whose report is over: Block said
// no Check is needed, or the Check returned and failed whom it failed,
// the waiter it checked included.
type reportingGraph struct {
	detect.Graph
	reported chan<- txnlock.TxnID
}

func (d reportingGraph) Block(e detect.Edge) bool {
	needsCheck := d.Graph.Block(e)
	if !needsCheck || d.Graph.DetectDelay() < 0 {
		d.reported <- e.Waiter.Txn()
	}
	return needsCheck
}

func (d reportingGraph) Check(w detect.Waiter) error {
	err := d.Graph.Check(w)
	if err != nil {
		// The waiter fails itself once Check returns; fail it now, so
		// that Status no longer shows it when the backend looks.
		w.Fail(err)
	}
	d.reported <- w.Txn()
	return err
}

// CheckInvariants checks the manager's own invariants if it is a Checker.
func (b *managerBackend) CheckInvariants() error {
	if c, ok := b.m.(Checker); ok {
		return c.CheckInvariants()
	}
	return nil
}
