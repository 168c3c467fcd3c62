package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/internal/optcheck"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults.
const (
	DefaultDelay            = 100 * time.Millisecond
	DefaultLeaseTTL         = 2 // seconds
	DefaultPrefix           = "/txnlock/deadlock/"
	DefaultSnapshotInterval = time.Second
	DefaultMaxExport        = 10_000
	DefaultConfirmTimeout   = time.Second
	DefaultHistorySize      = 16
)

// ErrDuplicateNode: Join found another live node registered under the same
// NodeID. Test with errors.Is.
var ErrDuplicateNode = errors.New("txnlock: cluster: node id already registered")

// Options configure a Node. The zero value of every field but NodeID,
// Client and ListenAddr means its default.
type Options struct {
	// NodeID names the node in the cluster; unique among live nodes.
	// Required.
	NodeID string
	// Client is the etcd client the node registers, campaigns and observes
	// with; its TLS and auth settings are the client's own. Required. The
	// node does not close it.
	Client *clientv3.Client
	// Prefix is the etcd key prefix under which nodes register and elect
	// the detector. Default: DefaultPrefix.
	Prefix string
	// ListenAddr is the TCP address the node listens on for the streams of
	// the other nodes while it is the elected detector, such as
	// "10.0.0.5:7400" or "127.0.0.1:0". Nothing else listens. Required.
	ListenAddr string
	// AdvertiseAddr is the address the other nodes dial; default: the
	// address the listener got.
	AdvertiseAddr string
	// ServerTLS, if set, makes the listener speak TLS; ClientTLS, if set,
	// makes the node dial the detector with TLS. Default: nil (plain TCP).
	ServerTLS, ClientTLS *tls.Config
	// Dial, if set, opens the node's connection to the elected detector's
	// address (ClientTLS then applies on top of it). Default: nil, a TCP
	// dial.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Delay is how long a wait lasts before the node exports it to the
	// elected detector: shorter waits never leave the node.
	// Default: DefaultDelay (100ms).
	Delay time.Duration
	// LeaseTTL is the node's etcd lease, in seconds: a node cut off from
	// etcd for that long is dropped from the cluster with its waits.
	// Default: DefaultLeaseTTL (2).
	LeaseTTL int
	// SnapshotInterval is the period of the full snapshots that replace a
	// node's waits at the detector, between deltas.
	// Default: DefaultSnapshotInterval (1s).
	SnapshotInterval time.Duration
	// MaxExport bounds the waits a node exports; those past it are counted
	// in Stats.Dropped. Default: DefaultMaxExport (10,000).
	MaxExport int
	// ConfirmTimeout bounds how long the detector waits for the nodes'
	// answers when it confirms a cycle. Default: DefaultConfirmTimeout (1s).
	ConfirmTimeout time.Duration
	// Priority ranks the node's transactions for the victim of a
	// cross-node cycle: the lowest value is failed, then the highest
	// TxnID (the youngest, if ids grow). Default: nil (all rank the same).
	Priority func(txnlock.TxnID) int64
	// HistorySize is how many cross-node deadlocks History keeps.
	// Default: DefaultHistorySize (16).
	HistorySize int
	// Local configures the node's own detector, which finds the cycles
	// within the node (its Clock is the node's too) and keeps the record
	// of waits the node exports from: its Detection may not be Off.
	Local deadlock.Options
	// OnCycle, if set, sees every cross-node cycle the elected detector
	// has confirmed, before its victim is failed, and may veto it by
	// returning false; the detector waits for it. For tests and audits.
	// Default: nil.
	OnCycle func(*DeadlockError) bool
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Delay == 0 {
		o.Delay = DefaultDelay
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.SnapshotInterval == 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
	if o.MaxExport == 0 {
		o.MaxExport = DefaultMaxExport
	}
	if o.ConfirmTimeout == 0 {
		o.ConfirmTimeout = DefaultConfirmTimeout
	}
	if o.HistorySize == 0 {
		o.HistorySize = DefaultHistorySize
	}
	o.Local.EnsureDefaults()
}

// Validate reports every problem at once.
func (o *Options) Validate() error {
	var p optcheck.Problems
	if o.NodeID == "" {
		p.Addf("NodeID is empty")
	}
	if strings.Contains(o.NodeID, "/") {
		p.Addf("NodeID %q contains '/'", o.NodeID)
	}
	if o.Client == nil {
		p.Addf("Client is nil")
	}
	if o.ListenAddr == "" {
		p.Addf("ListenAddr is empty")
	}
	if o.Delay < 0 {
		p.Addf("Delay %v is negative", o.Delay)
	}
	if o.LeaseTTL < 0 {
		p.Addf("LeaseTTL %d is negative", o.LeaseTTL)
	}
	if o.SnapshotInterval < 0 {
		p.Addf("SnapshotInterval %v is negative", o.SnapshotInterval)
	}
	if o.MaxExport < 0 {
		p.Addf("MaxExport %d is negative", o.MaxExport)
	}
	if o.ConfirmTimeout < 0 {
		p.Addf("ConfirmTimeout %v is negative", o.ConfirmTimeout)
	}
	if o.HistorySize < 0 {
		p.Addf("HistorySize %d is negative", o.HistorySize)
	}
	if o.Local.Detection == deadlock.Off {
		p.Addf("Local.Detection is Off: the node reads its waits from its own detector's record of them, which Off does not keep")
	}
	p.Merge(o.Local.Validate())
	return p.Err()
}

// String renders the options on one line.
func (o Options) String() string {
	return fmt.Sprintf("node=%s prefix=%s listen=%s delay=%v lease_ttl=%ds snapshot_interval=%v max_export=%d confirm_timeout=%v priority=%t history_size=%d tls=%t/%t local={%v}",
		o.NodeID, o.Prefix, o.ListenAddr, o.Delay, o.LeaseTTL, o.SnapshotInterval, o.MaxExport, o.ConfirmTimeout,
		o.Priority != nil, o.HistorySize, o.ServerTLS != nil, o.ClientTLS != nil, o.Local)
}
