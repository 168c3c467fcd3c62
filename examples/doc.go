// Package examples holds runnable programs that show txnlock at work:
//
//	go run ./examples/deadlock   # two transactions lock in opposite order; one is the victim
//	go run ./examples/phantom    # a range lock stops an insert into a scanned gap
//	go run ./examples/bank       # pessimistic transfers on Pebble with pebbletxn
//
// Each program's work is a run function that its test calls, so the
// examples cannot rot.
package examples
