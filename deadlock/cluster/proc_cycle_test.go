package cluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// lockOn sends a lock of key on p for txn; the answer comes later.
func lockOn(p *procNode, txn txnlock.TxnID, key string) <-chan answer {
	return p.do(command{Op: "lock", Txn: txn, Start: key, Mode: txnlock.Exclusive})
}

// procWaiting waits until txn waits on p.
func procWaiting(t testing.TB, p *procNode, txn txnlock.TxnID) {
	waitFor(t, fmt.Sprintf("%s to wait on %s", txn, p.id), func() bool {
		return slices.ContainsFunc(p.waits(), func(w waitReport) bool { return w.Txn == txn })
	})
}

// closeCycle makes txns base..base+len(on)-1 each hold key i on node
// on[i] and wait for key i+1 on node on[i+1]; it returns the answers of
// the waits, in order.
func closeCycle(t testing.TB, base txnlock.TxnID, on []*procNode) []<-chan answer {
	t.Helper()
	key := func(i int) string { return fmt.Sprintf("k%d-%d", base, i) }
	for i, p := range on {
		require.Empty(t, p.call(command{Op: "lock", Txn: base + txnlock.TxnID(i), Start: key(i), Mode: txnlock.Exclusive}).Err)
	}
	var out []<-chan answer
	for i := range on {
		next := (i + 1) % len(on)
		out = append(out, lockOn(on[next], base+txnlock.TxnID(i), key(next)))
		if i < len(on)-1 {
			procWaiting(t, on[next], base+txnlock.TxnID(i))
		}
	}
	return out
}

// breakCycle waits for the cycle's answers: exactly one is a cross-node
// deadlock; once its transaction rolls back the others are granted.
func breakCycle(t testing.TB, base txnlock.TxnID, nodes []*procNode, answers []<-chan answer) *cycleReport {
	t.Helper()
	type res struct {
		i int
		a answer
	}
	ch := make(chan res, len(answers))
	for i, c := range answers {
		go func() { ch <- res{i, <-c} }()
	}
	first := <-ch
	require.NotNil(t, first.a.Deadlock, "txn %d: %s", first.i, first.a.Err)
	require.Equal(t, base+txnlock.TxnID(first.i), first.a.Deadlock.Victim)
	require.Len(t, first.a.Deadlock.Txns, len(answers))
	unlockAll := func(txn txnlock.TxnID) {
		for _, p := range nodes {
			require.Empty(t, p.call(command{Op: "unlockall", Txn: txn}).Err)
		}
	}
	unlockAll(first.a.Deadlock.Victim)
	for range len(answers) - 1 {
		r := <-ch
		require.Empty(t, r.a.Err, "txn %d", r.i)
		unlockAll(base + txnlock.TxnID(r.i))
	}
	for i := range answers {
		unlockAll(base + txnlock.TxnID(i))
	}
	return first.a.Deadlock
}

// Cross-process 2- and 3-cycles, each edge on a different node process:
// each is found within the lease TTL (the managers' lock timeout), with
// exactly one victim.
func TestProcessCycles(t *testing.T) {
	ec := startEtcd(t, 3)
	o := procOptions{lease: 2, delay: 100 * time.Millisecond, timeout: 2 * time.Second}
	nodes := []*procNode{startProc(t, ec, "a", o), startProc(t, ec, "b", o), startProc(t, ec, "c", o)}
	procsConnected(t, nodes)
	d := breakCycle(t, 100, nodes, closeCycle(t, 100, nodes[:2]))
	require.ElementsMatch(t, []string{"a", "b"}, d.Nodes)
	d = breakCycle(t, 200, nodes, closeCycle(t, 200, nodes))
	require.ElementsMatch(t, []string{"a", "b", "c"}, d.Nodes)
}

// verdicts answers every cycle the node processes' detectors report, by
// judge, until stop is closed.
func verdicts(nodes []*procNode, judge func(*procNode, answer) bool, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, p := range nodes {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-p.done:
					return
				case a := <-p.cycles:
					p.verdict(a.CycleID, judge(p, a))
				}
			}
		})
	}
	return &wg
}

// The elected detector's process is killed (SIGKILL) with a cycle
// standing that it had found but not yet broken: the detector elected
// after its lease expires rebuilds the graph from the nodes' snapshots
// and breaks that cycle, and a cycle closed after the failover too,
// within the lease TTL + 2 s + D.
func TestLeaderKilled(t *testing.T) {
	ec := startEtcd(t, 3)
	const lease, delay = 1, 100 * time.Millisecond
	o := procOptions{lease: lease, delay: delay, timeout: lease*time.Second + 2*time.Second + delay + time.Second, hook: true}
	nodes := []*procNode{startProc(t, ec, "a", o), startProc(t, ec, "b", o), startProc(t, ec, "c", o)}
	lead := procsConnected(t, nodes)
	old := nodes[lead]
	var others []*procNode
	for i, p := range nodes {
		if i != lead {
			others = append(others, p)
		}
	}
	// The old detector finds the cycle and is told to hold it; it is
	// killed while it holds it.
	found := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	wg := verdicts(nodes, func(p *procNode, a answer) bool {
		if p == old {
			once.Do(func() { close(found) })
			return false
		}
		return true
	}, stop)
	defer func() { close(stop); wg.Wait() }()
	before := closeCycle(t, 300, others)
	<-found
	old.kill()
	d := breakCycle(t, 300, others, before)
	require.ElementsMatch(t, []string{others[0].id, others[1].id}, d.Nodes)
	procsConnected(t, others)
	breakCycle(t, 400, others, closeCycle(t, 400, others))
}
