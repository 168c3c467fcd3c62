package ddtest

import "github.com/txnlock/txnlock"

// Reachable returns the transactions reachable from from through edges
// (a waits-for graph: each transaction's blockers), from itself excluded
// unless a cycle leads back to it.
func Reachable(edges map[txnlock.TxnID][]txnlock.TxnID, from txnlock.TxnID) map[txnlock.TxnID]bool {
	seen := map[txnlock.TxnID]bool{}
	stack := []txnlock.TxnID{from}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, b := range edges[t] {
			if !seen[b] {
				seen[b] = true
				stack = append(stack, b)
			}
		}
	}
	return seen
}
