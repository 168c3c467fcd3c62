package pebbletxn

import (
	"encoding/binary"
	"testing"

	"github.com/txnlock/txnlock"
)

// BenchmarkTxn measures one transaction that locks and writes n keys and
// commits (NoSync, in memory), single goroutine: the cost pebbletxn and the
// manager add to Pebble batch writes. "none" writes the same keys untracked.
func BenchmarkTxn(b *testing.B) {
	for _, kind := range []managerKind{kindPoint, kindRange, "none"} {
		b.Run(string(kind), func(b *testing.B) {
			mk := kind
			if kind == "none" {
				mk = kindPoint
			}
			e := openMem(b, mk)
			key := make([]byte, 8)
			val := make([]byte, 100)
			b.ResetTimer()
			for i := range b.N {
				txn, err := e.db.Begin(nil)
				if err != nil {
					b.Fatal(err)
				}
				for j := range 4 {
					binary.BigEndian.PutUint64(key, uint64(i*4+j)%100000)
					if kind == "none" {
						err = txn.PutUntracked(txnlock.DefaultColumnFamily, key, val)
					} else {
						err = txn.Put(bg, txnlock.DefaultColumnFamily, key, val)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := txn.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetForUpdate measures a locking read of an existing key plus
// commit (a one-lock transaction).
func BenchmarkGetForUpdate(b *testing.B) {
	for _, kind := range kinds {
		b.Run(string(kind), func(b *testing.B) {
			e := openMem(b, kind)
			key := make([]byte, 8)
			w, _ := e.db.Begin(nil)
			for i := range 1000 {
				binary.BigEndian.PutUint64(key, uint64(i))
				_ = w.PutUntracked(txnlock.DefaultColumnFamily, key, []byte("v"))
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				txn, _ := e.db.Begin(nil)
				binary.BigEndian.PutUint64(key, uint64(i%1000))
				if _, _, err := txn.GetForUpdate(bg, txnlock.DefaultColumnFamily, key, txnlock.Exclusive); err != nil {
					b.Fatal(err)
				}
				_ = txn.Commit()
			}
		})
	}
}
