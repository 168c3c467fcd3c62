package deadlock

import (
	"testing"

	"github.com/txnlock/txnlock"
)

func BenchmarkMicroWaitCycle(b *testing.B) {
	d, _ := newDetector(Options{}, false)
	r := d.NewResource()
	d.SetBlockers(r, []txnlock.TxnID{1})
	ws := make([]*testWaiter, 1000)
	for i := range ws {
		ws[i] = &testWaiter{txn: txnlock.TxnID(10 + i)}
		d.Block(txnlock.WaitEdge{Waiter: ws[i], Resource: r})
	}
	hb := []txnlock.TxnID{0}
	b.ResetTimer()
	for i := range b.N {
		w := ws[i%len(ws)]
		d.Unblock(w)
		hb[0] = w.txn
		d.SetBlockers(r, hb)
		d.Block(txnlock.WaitEdge{Waiter: w, Resource: r})
		d.Check(w)
	}
}
