package txnlock

import "fmt"

// TxnID identifies a transaction. The same TxnID means the same transaction
// in every manager that shares a Detector. The zero TxnID is invalid.
type TxnID uint64

// Valid reports whether id may be used in a lock request.
func (id TxnID) Valid() bool { return id != 0 }

// String renders the id as "txn 7".
func (id TxnID) String() string { return fmt.Sprintf("txn %d", uint64(id)) }

// Mode is the strength of a lock. The zero Mode is invalid, so a forgotten
// mode is an error rather than a silent shared lock.
type Mode uint8

const (
	// Shared locks are compatible with other Shared locks.
	Shared Mode = 1
	// Exclusive locks are compatible with nothing held by another transaction.
	Exclusive Mode = 2
)

// Valid reports whether m is Shared or Exclusive.
func (m Mode) Valid() bool { return m == Shared || m == Exclusive }

// Compatible reports whether a lock of mode m held by one transaction can
// coexist with a lock of mode o held by another. Only Shared+Shared can.
func (m Mode) Compatible(o Mode) bool { return m == Shared && o == Shared }

// Covers reports whether holding m satisfies a request for o: Exclusive
// covers both modes, Shared covers only Shared.
func (m Mode) Covers(o Mode) bool { return m >= o }

// Max returns the stronger of m and o.
func (m Mode) Max(o Mode) Mode {
	if o > m {
		return o
	}
	return m
}

// String renders "S", "X", or "Mode(n)" for an invalid mode.
func (m Mode) String() string {
	switch m {
	case Shared:
		return "S"
	case Exclusive:
		return "X"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ColumnFamily identifies an independent key space inside a manager (the
// analogue of a RocksDB column family). DefaultColumnFamily always exists;
// other ids are registered with Manager.AddColumnFamily. Negative ids are
// invalid.
type ColumnFamily int32

// DefaultColumnFamily is registered when a manager is created and cannot be
// dropped.
const DefaultColumnFamily ColumnFamily = 0

// String renders "cf 3".
func (cf ColumnFamily) String() string { return fmt.Sprintf("cf %d", int32(cf)) }
