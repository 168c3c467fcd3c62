// Package examples holds runnable programs that show txnlock at work:
//
//	go run ./examples/bank            # pessimistic transfers on Pebble, on disk, with deadlock retries
//	go run ./examples/columnfamilies  # the same key in two column families is two locks
//	go run ./examples/deadlock        # a cycle across two managers; one transaction is the victim
//	go run ./examples/escalation      # a memory budget makes the range manager merge locks
//	go run ./examples/kvstore         # a tiny key-value store that embeds the point manager
//	go run ./examples/phantom         # a range lock stops an insert into a scanned gap
//	go run ./examples/waits           # who waits for whom, sampled from Status during a contended run
//
// Each program's work is a run function that its test calls and checks,
// so the examples cannot rot.
package examples
