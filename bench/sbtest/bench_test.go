package sbtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/txnlock/txnlock"
)

// BenchmarkWriteOnly runs sysbench's oltp_write_only transaction (UPDATE
// k=k+1, UPDATE c, DELETE, INSERT the same id, COMMIT) on an in-memory
// table of 10000 rows, NoSync, from GOMAXPROCS goroutines (b.RunParallel).
// Deadlocks and timeouts roll back and count as retries. Reported: ns per
// committed transaction, lock requests per committed transaction.
func BenchmarkWriteOnly(b *testing.B) {
	for _, lock := range []LockKind{LockPoint, LockRange, LockTable, LockNone} {
		for _, layout := range []Layout{LayoutShared, LayoutPerIndex} {
			b.Run(fmt.Sprintf("lock=%s/layout=%s", lock, layout), func(b *testing.B) {
				db := open(b, Options{Lock: lock, Layout: layout, TableSize: 10000})
				if lock == LockNone {
					// Unsafe for concurrent writers: one goroutine only.
					b.SetParallelism(1)
				}
				var seed, locks, retries atomic.Int64
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(uint64(seed.Add(1)), 3))
					id := func() int64 { return 1 + rng.Int64N(10000) }
					for pb.Next() {
						for {
							tx := db.Begin()
							id3 := id()
							err := writeOnly(tx, id(), id(), id3, id())
							if err == nil {
								n := tx.LockRequests()
								if err = tx.Commit(); err == nil {
									locks.Add(int64(n))
									break
								}
							}
							tx.Rollback()
							if !errors.Is(err, txnlock.ErrDeadlock) && !errors.Is(err, txnlock.ErrLockTimeout) && !errors.Is(err, ErrDuplicateKey) {
								b.Fatal(err)
							}
							retries.Add(1)
						}
					}
				})
				b.ReportMetric(float64(locks.Load())/float64(b.N), "locks/txn")
				b.ReportMetric(float64(retries.Load())/float64(b.N), "retries/txn")
			})
		}
	}
}

// BenchmarkPrepare loads one table of 10000 rows (PK + SK) in memory,
// flush included. Reported per table.
func BenchmarkPrepare(b *testing.B) {
	for range b.N {
		db, err := Open(Options{TableSize: 10000})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Prepare(bg); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
}

// BenchmarkWriteOnlyPebbleSizes compares, single goroutine, point locking
// with Pebble's own sizes (4 MB memtable, 8 MB cache) and with the RocksDB
// defaults sbtest uses (64 MB, 32 MB).
func BenchmarkWriteOnlyPebbleSizes(b *testing.B) {
	for _, c := range []struct {
		name     string
		cache    int64
		memtable uint64
	}{{"pebble-defaults", 8 << 20, 4 << 20}, {"rocksdb-defaults", 0, 0}} {
		b.Run(c.name, func(b *testing.B) {
			db := open(b, Options{TableSize: 10000, CacheSize: c.cache, MemTableSize: c.memtable})
			rng := rand.New(rand.NewPCG(1, 3))
			id := func() int64 { return 1 + rng.Int64N(10000) }
			b.ResetTimer()
			for range b.N {
				tx := db.Begin()
				if err := writeOnly(tx, id(), id(), id(), id()); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
