// Command waits watches a contended run from outside: while clients
// fight over a few hot keys, a watcher samples the manager's Status (the
// analog of InnoDB's performance_schema.data_lock_waits) and reports who
// waited for whom, on which key, and the longest queue it saw.
//
//	go run ./examples/waits
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/pointlock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	clients = 6
	txns    = 30 // per client
	hotKeys = 3
)

func run(w io.Writer) error {
	m, err := pointlock.New(pointlock.Options{})
	if err != nil {
		return err
	}
	defer m.Close()

	done := make(chan struct{})
	watched := make(chan watch)
	go func() { watched <- watchWaits(m, done) }()

	var next atomic.Uint64
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range txns {
				txn := txnlock.TxnID(next.Add(1))
				if errs[c] = work(m, txn, (c+i)%hotKeys); errs[c] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	res := <-watched
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	res.print(w)
	return nil
}

func hotKey(i int) []byte { return []byte(fmt.Sprintf("hot/%d", i)) }

// work is one transaction: it locks hot key k and holds it a while, as a
// transaction that does some work under its lock.
func work(m *pointlock.Manager, txn txnlock.TxnID, k int) error {
	if err := m.Lock(context.Background(), txnlock.Request{Txn: txn, Range: txnlock.Point(hotKey(k)), Mode: txnlock.Exclusive}); err != nil {
		return err
	}
	time.Sleep(200 * time.Microsecond)
	return m.UnlockAll(txn)
}

// watch is what the watcher saw.
type watch struct {
	samples, withWaits int
	waits              map[string]int // per key: waits seen (a wait seen in several samples counts once)
	longest            map[string]int // per key: the most waiters at once
	busiest            []string       // the sample with the most waiters, one line per wait
}

// watchWaits samples m's Status until done is closed.
func watchWaits(m *pointlock.Manager, done <-chan struct{}) watch {
	res := watch{waits: map[string]int{}, longest: map[string]int{}}
	type wait struct {
		txn txnlock.TxnID
		key string
	}
	seen := map[wait]bool{}
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return res
		case <-tick.C:
		}
		st := m.Status()
		res.samples++
		if len(st.Waits) == 0 {
			continue
		}
		res.withWaits++
		queue := map[string]int{}
		var lines []string
		for _, ws := range st.Waits {
			key := ws.Range.String()
			queue[key]++
			if !seen[wait{ws.Txn, key}] {
				seen[wait{ws.Txn, key}] = true
				res.waits[key]++
			}
			lines = append(lines, fmt.Sprintf("txn %d waits for %s %v, blocked by %v", ws.Txn, key, ws.Mode, ws.Blockers))
		}
		for k, n := range queue {
			res.longest[k] = max(res.longest[k], n)
		}
		if len(lines) > len(res.busiest) {
			res.busiest = lines
		}
	}
}

func (res watch) print(w io.Writer) {
	fmt.Fprintf(w, "%d clients ran %d transactions on %d hot keys\n", clients, clients*txns, hotKeys)
	fmt.Fprintf(w, "the watcher took %d samples of Status; %d showed waits\n", res.samples, res.withWaits)
	keys := make([]string, 0, len(res.waits))
	for k := range res.waits {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %d waits seen, at most %d waiters at once\n", k, res.waits[k], res.longest[k])
	}
	fmt.Fprintf(w, "the busiest sample:\n  %s\n", strings.Join(res.busiest, "\n  "))
}
