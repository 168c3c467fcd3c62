package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"vitess.io/vitess/go/mysql"
)

// watchAfter is how long a statement runs before the server watches its
// connection for a disconnect: a statement waiting for a lock must end
// when its client goes away (its locks are then released), and the
// connection is not read while the statement runs. Statements shorter
// than this cost a timer, not a goroutine.
const watchAfter = 50 * time.Millisecond

// watcher watches one connection while a statement runs. Owned by the
// connection's goroutine, except what mu guards.
type watcher struct {
	timer *time.Timer // fires watch; made by the first start
	// mu guards the fields below, shared with the watching goroutine.
	mu       sync.Mutex
	running  bool // a statement runs
	watching bool // the goroutine is reading the socket
	cancel   context.CancelCauseFunc
	done     chan struct{}
	raw      net.Conn
}

// start arms the watcher for a statement; cancel ends the statement when
// the client disconnects.
func (w *watcher) start(c *mysql.Conn, cancel context.CancelCauseFunc) {
	w.mu.Lock()
	w.running, w.watching, w.raw, w.cancel = true, false, c.GetRawConn(), cancel
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(watchAfter, w.watch)
		return
	}
	w.timer.Reset(watchAfter)
}

// watch blocks until the client closes the connection (then it cancels
// the statement) or stop interrupts it.
func (w *watcher) watch() {
	w.mu.Lock()
	if !w.running || w.watching { // a late fire of the last statement's timer may meet this one's
		w.mu.Unlock()
		return
	}
	w.watching, w.done = true, make(chan struct{})
	raw, done, cancel := w.raw, w.done, w.cancel
	w.mu.Unlock()
	defer close(done)
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	closed := false
	buf := make([]byte, 1)
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if errors.Is(err, syscall.EAGAIN) {
			return false // nothing yet: wait until readable
		}
		// End of stream or a socket error: the client is gone. Data
		// (a pipelined command) is left for the connection to read.
		closed = err != nil || n == 0
		return true
	})
	var ne net.Error
	if closed || err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		cancel(errDisconnected)
	}
}

// stop ends the watch of the statement that ran, before the connection's
// goroutine reads the socket again.
func (w *watcher) stop() {
	w.timer.Stop()
	w.mu.Lock()
	w.running = false
	watching, done, raw := w.watching, w.done, w.raw
	w.watching = false
	w.mu.Unlock()
	if !watching {
		return
	}
	raw.SetReadDeadline(time.Unix(1, 0))
	<-done
	raw.SetReadDeadline(time.Time{})
}
