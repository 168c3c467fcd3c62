package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/txnlock/txnlock"
)

// protocolVersion is carried by every message on a node's stream; a peer
// of another version is refused.
const protocolVersion = 1

// kind is what a message says.
type kind string

const (
	// node to detector
	kindHello    kind = "hello"    // opens the stream: the node's id
	kindSnapshot kind = "snapshot" // replaces the node's waits
	kindDelta    kind = "delta"    // adds or replaces (Waits) and removes (Gone) waits
	kindAnswer   kind = "answer"   // to a confirm or a fail, by ID
	// detector to node
	kindConfirm kind = "confirm" // read these edges again
	kindFail    kind = "fail"    // fail this wait with this deadlock
)

// message is one line of JSON on a node's stream. Every message carries
// the protocol version and the epoch of the detector the stream is for.
type message struct {
	Version int      `json:"v"`
	Epoch   int64    `json:"epoch"`
	Kind    kind     `json:"kind"`
	Node    string   `json:"node,omitempty"`
	Waits   []wait   `json:"waits,omitempty"`
	Gone    []uint64 `json:"gone,omitempty"`
	Dropped uint64   `json:"dropped,omitempty"`
	// ID pairs a confirm or a fail with its answer.
	ID uint64 `json:"id,omitempty"`
	// Check is what a confirm asks: each wait (by Seq and Txn) must still
	// wait for each transaction in its To.
	Check []wait `json:"check,omitempty"`
	// OK answers a confirm (every edge holds) or a fail (delivered).
	OK bool `json:"ok,omitempty"`
	// Entries describe the confirmed waits, in Check's order (answer).
	Entries []entry `json:"entries,omitempty"`
	// Deadlock is the cycle a fail breaks.
	Deadlock *wireDeadlock `json:"deadlock,omitempty"`
}

// wait is one exported wait: the wait's number on its node, its
// transaction, whom it waits for directly (Waiter.WaitsFor), its
// priority and since when it is reported.
type wait struct {
	Seq      uint64          `json:"seq"`
	Txn      txnlock.TxnID   `json:"txn"`
	To       []txnlock.TxnID `json:"to,omitempty"`
	Priority int64           `json:"prio,omitempty"`
}

// entry is a confirmed wait, for the report.
type entry struct {
	Txn       txnlock.TxnID   `json:"txn"`
	Lock      lockRef         `json:"lock"`
	Blockers  []txnlock.TxnID `json:"blockers,omitempty"`
	LocksHeld int             `json:"held"`
	Since     time.Time       `json:"since"`
}

// wireDeadlock is a cross-node deadlock as the detector sends it to the
// victim's node.
type wireDeadlock struct {
	Victim txnlock.TxnID `json:"victim"`
	Cycle  []entry       `json:"cycle"`
	Nodes  []string      `json:"nodes"`
	Epoch  int64         `json:"epoch"`
	Time   time.Time     `json:"time"`
	Wait   uint64        `json:"wait"` // the victim's wait on its node
}

// conn is one end of a node's stream: messages in, messages out, one
// writer at a time.
type conn struct {
	c   net.Conn
	dec *json.Decoder
	// wmu serializes writes and guards enc.
	wmu sync.Mutex
	enc *json.Encoder
	bw  *bufio.Writer
}

func newConn(c net.Conn) *conn {
	bw := bufio.NewWriter(c)
	return &conn{c: c, dec: json.NewDecoder(bufio.NewReader(c)), enc: json.NewEncoder(bw), bw: bw}
}

// writeTimeout bounds one write: a peer that takes no bytes for that long
// is cut off (a blackholed link).
const writeTimeout = 2 * time.Second

// send writes m, stamped with the protocol version.
func (c *conn) send(m *message) error {
	m.Version = protocolVersion
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := c.enc.Encode(m); err != nil {
		return err
	}
	return c.bw.Flush()
}

// recv reads the next message and refuses one of another version.
func (c *conn) recv() (*message, error) {
	m := new(message)
	if err := c.dec.Decode(m); err != nil {
		return nil, err
	}
	if m.Version != protocolVersion {
		return nil, fmt.Errorf("protocol version %d, want %d", m.Version, protocolVersion)
	}
	return m, nil
}

func (c *conn) close() error { return c.c.Close() }

// lockRef is a txnlock.LockRef on the wire.
type lockRef struct {
	CF    txnlock.ColumnFamily `json:"cf"`
	Start bound                `json:"start"`
	End   bound                `json:"end"`
	Mode  txnlock.Mode         `json:"mode"`
}

// bound is a txnlock.Bound on the wire.
type bound struct {
	Key   []byte `json:"key,omitempty"`
	After bool   `json:"after,omitempty"`
	Inf   bool   `json:"inf,omitempty"`
}

func toWire(l txnlock.LockRef) lockRef {
	b := func(x txnlock.Bound) bound { return bound{Key: x.Key(), After: x.IsAfter(), Inf: x.IsPosInf()} }
	return lockRef{CF: l.CF, Start: b(l.Range.Start()), End: b(l.Range.End()), Mode: l.Mode}
}

// lockRef returns the reference, or one with a zero Range if the wire's
// range is not valid.
func (l lockRef) lockRef() txnlock.LockRef {
	b := func(x bound) txnlock.Bound {
		switch {
		case x.Inf:
			return txnlock.PosInf()
		case x.After:
			return txnlock.BoundAfter(x.Key)
		}
		return txnlock.BoundBefore(x.Key)
	}
	r, _ := txnlock.NewRange(b(l.Start), b(l.End))
	return txnlock.LockRef{CF: l.CF, Range: r, Mode: l.Mode}
}
