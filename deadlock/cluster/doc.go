// Package cluster finds deadlocks that cross processes: a storage engine
// that runs one lock manager per node joins each node to a cluster on
// etcd, and a transaction that waits on two nodes, closing a cycle that no
// node's own detector sees, is failed with a *DeadlockError that names
// the nodes of the cycle. Cycles within one node stay with that node's own
// detector, a deadlock.Detector, as before.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: endpoints}) // see Failures
//	node, err := cluster.Join(ctx, cluster.Options{
//		NodeID:     "node-7",        // unique among live nodes
//		Client:     cli,             // its TLS and auth settings apply
//		ListenAddr: "10.0.0.7:7400", // the other nodes' streams, while elected
//	})
//	if err != nil { ... }            // cluster.ErrDuplicateNode, etcd unreachable
//	defer node.Close()               // after the managers
//	wo := txnlock.WaitOptions{Detector: node, LockTimeout: 5 * time.Second}
//	points, _ := pointlock.New(pointlock.Options{WaitOptions: wo})
//	...
//	err = points.Lock(ctx, req)
//	if errors.Is(err, txnlock.ErrDeadlock) {
//		// req's transaction is the victim: roll it back on every node, retry
//	}
//
// Transaction ids are the engine's, and must be unique across the nodes:
// a transaction that locks on three nodes uses one id on all three. Give
// each coordinator a range of ids, for example its node number in the
// high 16 bits and a counter in the low 48
// (txnlock.TxnID(uint64(nodeNum)<<48 | seq)).
//
// A cluster detector needs every wait to end by a timeout, since a node
// cut off from the others cannot have its cross-node cycles found: with a
// Node attached, a manager refuses a LockTimeout or a Request.Timeout of
// txnlock.WaitForever (txnlock.ErrInvalidTimeout).
//
// # The life of a wait
//
// A request that waits on a node is reported to the node's own detector
// at once, which breaks any cycle within the node. If the wait lasts
// Options.Delay (default 100 ms; the node looks every half Delay, so
// between Delay and one and a half), the node exports it to the elected
// detector: the wait's transaction and whom it waits for directly, as
// the lock table answers it now. Waits that end sooner never leave the
// node; a busy manager's waits are mostly over within microseconds, and
// cost the node nothing: it reads the waits from the local detector's own
// record of them, every half Delay.
//
// The elected detector keeps the union of the nodes' exports and
// searches it for cycles every half Delay and whenever an export changes.
// A cycle whose edges all lie on one node is left to that node. For a
// cycle across nodes it asks each node that owns an edge to read that
// edge again against its live lock table — the same wait still waits,
// and still waits for the next transaction of the cycle — and, once every
// node has answered, asks again: only a cycle confirmed by both rounds is
// broken. The victim is the transaction with the lowest Options.Priority,
// then the highest id; its node fails the wait, if it still waits, with a
// *DeadlockError (errors.Is txnlock.ErrDeadlock; errors.As also finds the
// *txnlock.DeadlockError inside). Its Lock call returns it; the others
// of the cycle go on waiting. A cycle is broken between Delay and twice
// Delay after it closed (about 145 ms at the default).
//
// # Failures
//
//   - The elected detector fails or is cut off: its etcd lease expires
//     (Options.LeaseTTL, default 2 s), another node is elected, every
//     node streams to it with a full snapshot of its waits, and the cycles
//     that stood are found again.
//   - A detector's epoch is the revision of its election: every message
//     carries it, and a message of another epoch is refused on either side
//     (Stats.Stale).
//   - A node cut off from the elected detector keeps its own detection;
//     its cross-node waits end by their timeouts.
//   - A node cut off from etcd loses its lease: the detector drops its
//     waits, and the node registers again once etcd is back. While etcd
//     has no quorum, every node keeps its own detection, and Stats shows
//     the node unregistered.
//   - Stopping an etcd member, even the raft leader, changes nothing while
//     the others keep quorum: sessions move to the other members, and the
//     detector keeps its epoch, provided the client reconnects to another
//     member well within the lease TTL: give it a short reconnection
//     backoff (grpc.WithConnectParams in clientv3.Config.DialOptions, a
//     base delay of tens of milliseconds).
//
// # Observing
//
// Stats tells the node's link to etcd and to the elected detector, what
// it exports and drops (Options.MaxExport), the victims it failed, and,
// while elected, the cycles found, confirmed, and found but not confirmed
// (FalseCandidatesAvoided). History keeps the latest cross-node
// deadlocks whose victim waited on the node; Local gives the node's own
// detector, its Stats and its History. Options.OnCycle sees each
// confirmed cycle before its victim is failed.
//
// # Internals
//
// Each node holds an etcd session (a lease of LeaseTTL seconds), under
// which it registers its id (Prefix + "nodes/" + id, refused if taken)
// and campaigns in a concurrency.Election (Prefix + "election"), whose
// value is the address the others dial. Every node observes the
// election; the node elected serves as the detector until its session
// ends, then campaigns again under a new one.
//
// A node's stream to the detector is one TCP connection (TLS if
// Options.ServerTLS and ClientTLS are set) carrying JSON messages, one a
// line, each with the protocol version and the detector's epoch: the
// node's hello, then a full snapshot of its exported waits every
// SnapshotInterval (default 1 s), which replaces what the detector had of
// it, and deltas between them; the detector's confirmation requests and
// fail orders go the other way, answered on the same stream. A snapshot
// bounds what a lost delta costs: after a link heals, the detector's graph
// equals the nodes' exports within a snapshot period and Delay. The
// detector drops a node's waits when its stream breaks or its
// registration leaves etcd.
//
// Each exported wait has a number on its node, so that a confirmation or
// a fail names the very wait that was exported: a transaction that
// stopped waiting and waits again is a different wait, and the cycle is
// not confirmed.
package cluster
