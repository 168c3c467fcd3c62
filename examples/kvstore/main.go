// Command kvstore is a tiny transactional key-value store that embeds
// txnlock's point lock manager: values live in a map, a transaction
// locks what it reads (shared) and writes (exclusive) until it commits,
// and buffers its writes until then (strict two-phase locking). Clients
// that increment a counter read-then-write; two readers that both want to
// write deadlock, the detector fails one, and it retries (locking the key
// exclusive from the start, as SELECT ... FOR UPDATE does, avoids that).
//
//	go run ./examples/kvstore
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/deadlock"
	"github.com/txnlock/txnlock/pointlock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	clients    = 4
	increments = 100 // per client
)

func run(w io.Writer) error {
	s, err := newStore()
	if err != nil {
		return err
	}
	defer s.close()
	var retries atomic.Int64
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				for {
					err := s.increment(context.Background(), "counter")
					if errors.Is(err, txnlock.ErrDeadlock) {
						retries.Add(1)
						continue
					}
					errs[c] = err
					break
				}
				if errs[c] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	v, _ := s.read("counter")
	fmt.Fprintf(w, "counter = %s after %d increments by %d clients (%d retried after a deadlock)\n", v, clients*increments, clients, retries.Load())
	fmt.Fprintf(w, "locks held now: %d\n", s.locks.Stats().CurrentLocks)
	return nil
}

// store is the key-value store: committed values and the lock manager.
type store struct {
	det   *deadlock.Detector
	locks *pointlock.Manager
	next  atomic.Uint64 // the last transaction id

	// mu guards data; a transaction applies its writes under it.
	mu   sync.Mutex
	data map[string]string
}

func newStore() (*store, error) {
	det, err := deadlock.New(deadlock.Options{})
	if err != nil {
		return nil, err
	}
	locks, err := pointlock.New(pointlock.Options{WaitOptions: txnlock.WaitOptions{Detector: det}})
	if err != nil {
		det.Close()
		return nil, err
	}
	return &store{det: det, locks: locks, data: map[string]string{}}, nil
}

func (s *store) close() {
	s.locks.Close()
	s.det.Close()
}

// read returns the committed value of key, without locking.
func (s *store) read(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	return v, ok
}

// txn is one transaction: its id and its buffered writes.
type txn struct {
	s      *store
	id     txnlock.TxnID
	writes map[string]string
}

func (s *store) begin() *txn {
	return &txn{s: s, id: txnlock.TxnID(s.next.Add(1)), writes: map[string]string{}}
}

// get locks key shared and returns its value as this transaction sees it.
func (t *txn) get(ctx context.Context, key string) (string, error) {
	if err := t.s.locks.Lock(ctx, txnlock.Request{Txn: t.id, Range: txnlock.Point([]byte(key)), Mode: txnlock.Shared}); err != nil {
		return "", err
	}
	if v, ok := t.writes[key]; ok {
		return v, nil
	}
	v, _ := t.s.read(key)
	return v, nil
}

// put locks key exclusive and buffers the write.
func (t *txn) put(ctx context.Context, key, value string) error {
	if err := t.s.locks.Lock(ctx, txnlock.Request{Txn: t.id, Range: txnlock.Point([]byte(key)), Mode: txnlock.Exclusive}); err != nil {
		return err
	}
	t.writes[key] = value
	return nil
}

// commit applies the writes, then releases the locks.
func (t *txn) commit() error {
	t.s.mu.Lock()
	for k, v := range t.writes {
		t.s.data[k] = v
	}
	t.s.mu.Unlock()
	return t.s.locks.UnlockAll(t.id)
}

// rollback drops the writes and releases the locks.
func (t *txn) rollback() error { return t.s.locks.UnlockAll(t.id) }

// increment adds one to the number at key: a read, then a write that
// upgrades the shared lock to exclusive.
func (s *store) increment(ctx context.Context, key string) error {
	t := s.begin()
	v, err := t.get(ctx, key)
	if err != nil {
		t.rollback()
		return err
	}
	n, _ := strconv.Atoi(v)           // "" is 0
	time.Sleep(50 * time.Microsecond) // the application's work between the read and the write
	if err := t.put(ctx, key, strconv.Itoa(n+1)); err != nil {
		t.rollback()
		return err
	}
	return t.commit()
}
