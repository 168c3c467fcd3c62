package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// A randomized load over three node processes: transactions lock points
// and ranges, Shared and Exclusive (upgrades included), on any node,
// cancel some requests and release some locks mid-transaction. Before any victim of a cross-node
// cycle is failed, the clients are paused and the cycle is checked
// against every node's Status: each member waits, on its node, for the
// next. No false deadlock is allowed, some cycles must be found, and at
// the end no transaction is stuck and no lock is left.
func TestLoadNoFalseDeadlocks(t *testing.T) {
	ec := startEtcd(t, 3)
	o := procOptions{lease: 2, delay: 20 * time.Millisecond, timeout: 10 * time.Second, hook: true}
	nodes := []*procNode{startProc(t, ec, "a", o), startProc(t, ec, "b", o), startProc(t, ec, "c", o)}
	procsConnected(t, nodes)
	byID := map[string]*procNode{}
	for _, p := range nodes {
		byID[p.id] = p
	}

	// gate pauses the clients: each takes it shared around every request
	// it sends and every release; a check takes it exclusively.
	var gate sync.RWMutex
	var checked, falseOnes atomic.Int64
	stop := make(chan struct{})
	judges := verdicts(nodes, func(_ *procNode, a answer) bool {
		gate.Lock()
		defer gate.Unlock()
		c := a.Cycle
		ok := true
		for i, txn := range c.Txns {
			if !waitsOn(byID[c.Nodes[i]].waits(), txn, c.Txns[(i+1)%len(c.Txns)]) {
				ok = false
			}
		}
		checked.Add(1)
		if !ok {
			falseOnes.Add(1)
			var st []string
			for _, p := range nodes {
				st = append(st, fmt.Sprintf("%s: %+v", p.id, p.waits()))
			}
			t.Errorf("false deadlock: %+v\n%s", *c, strings.Join(st, "\n"))
		}
		return true
	}, stop)

	const workers, txnsPerWorker = 8, 60
	var nextTxn atomic.Uint64
	var deadlocks, timeouts, cancels atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range txnsPerWorker {
				txn := txnlock.TxnID(nextTxn.Add(1))
				type lock struct {
					p *procNode
					c command
				}
				var held []lock
				for range 2 + rng.IntN(3) {
					l := lock{nodes[rng.IntN(len(nodes))], command{Op: "lock", Txn: txn, Start: fmt.Sprintf("k%d", rng.IntN(6)), Mode: txnlock.Exclusive}}
					if rng.IntN(3) == 0 {
						l.c.Mode = txnlock.Shared
					}
					if rng.IntN(4) == 0 {
						l.c.End = l.c.Start + "z" // a range: [kN, kNz)
					}
					if len(held) > 0 && rng.IntN(5) == 0 { // an upgrade, or the same lock again
						l = held[rng.IntN(len(held))]
						l.c.Mode = txnlock.Exclusive
					}
					gate.RLock()
					ch, id := l.p.send(l.c)
					if rng.IntN(8) == 0 { // a cancel, while it waits or not
						l.p.call(command{Op: "cancel", Target: id})
					}
					gate.RUnlock()
					a := <-ch
					if a.Err != "" {
						switch {
						case a.Timeout:
							timeouts.Add(1)
						case strings.Contains(a.Err, "context canceled"):
							cancels.Add(1)
						default:
							deadlocks.Add(1)
						}
						break
					}
					held = append(held, l)
					if rng.IntN(6) == 0 { // a lock released mid-transaction
						i := rng.IntN(len(held))
						u := held[i]
						u.c.Op = "unlock"
						gate.RLock()
						u.p.call(u.c)
						gate.RUnlock()
						held = slices.Delete(held, i, i+1)
					}
				}
				gate.RLock()
				for _, p := range nodes {
					p.call(command{Op: "unlockall", Txn: txn})
				}
				gate.RUnlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	judges.Wait()
	for _, p := range nodes {
		require.Empty(t, p.waits(), "node %s", p.id)
	}
	var victims uint64
	for _, p := range nodes {
		victims += p.stats().Victims
	}
	t.Logf("deadlocks=%d (cross-node victims %d, cycles checked %d) timeouts=%d cancels=%d", deadlocks.Load(), victims, checked.Load(), timeouts.Load(), cancels.Load())
	require.Zero(t, falseOnes.Load())
	require.Positive(t, victims, "no cross-node cycle formed")
	require.Zero(t, timeouts.Load(), "a wait ended by timeout: a cycle was missed")
}

// waitsOn reports whether txn waits, among a node's waits (Status), for
// next: directly, or through other waits on the node (the cycle the
// detector confirms is read by Waiter.WaitsFor, as the lock will stand
// once ended requests have left its queue, and may skip a request that
// Status still lists between the two).
func waitsOn(ws []waitReport, txn, next txnlock.TxnID) bool {
	seen := map[txnlock.TxnID]bool{txn: true}
	for queue := []txnlock.TxnID{txn}; len(queue) > 0; queue = queue[1:] {
		for _, w := range ws {
			if w.Txn != queue[0] {
				continue
			}
			if slices.Contains(w.Blockers, next) {
				return true
			}
			for _, b := range w.Blockers {
				if !seen[b] {
					seen[b] = true
					queue = append(queue, b)
				}
			}
		}
	}
	return false
}
