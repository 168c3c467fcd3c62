package pointlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// model is the reference the fuzz target checks the Manager against: a map
// of (column family, key) to holders, without queues (every request of the
// fuzz target is NoWait, so nothing ever waits).
type model struct {
	maxLocks int
	closed   bool
	cfs      map[txnlock.ColumnFamily]bool
	locks    map[modelKey]map[txnlock.TxnID]txnlock.Mode
}

type modelKey struct {
	cf  txnlock.ColumnFamily
	key string
}

func newModel(maxLocks int) *model {
	return &model{
		maxLocks: maxLocks,
		cfs:      map[txnlock.ColumnFamily]bool{0: true},
		locks:    map[modelKey]map[txnlock.TxnID]txnlock.Mode{},
	}
}

// lock is Manager.Lock with NoWait semantics; it returns the sentinel the
// manager must return (nil: granted).
func (md *model) lock(ctxState int, req txnlock.Request) error {
	switch {
	case ctxState == ctxNil:
		return txnlock.ErrNilContext
	case md.closed:
		return txnlock.ErrClosed
	case !req.Txn.Valid():
		return txnlock.ErrInvalidTxn
	case !req.Mode.Valid():
		return txnlock.ErrInvalidMode
	}
	key, err := pointKey(&req.Range)
	if err != nil {
		return err
	}
	if req.Timeout < 0 && req.Timeout != txnlock.NoWait {
		return txnlock.ErrInvalidTimeout
	}
	if !md.cfs[req.CF] {
		return txnlock.ErrUnknownColumnFamily
	}
	if ctxState == ctxCancelled {
		return context.Canceled
	}
	k := modelKey{req.CF, string(key)}
	holders := md.locks[k]
	if m, ok := holders[req.Txn]; ok && m.Covers(req.Mode) {
		return nil
	}
	for t, m := range holders {
		if t != req.Txn && !m.Compatible(req.Mode) {
			return txnlock.ErrLockNoWait
		}
	}
	if len(holders) == 0 {
		if md.maxLocks > 0 && len(md.locks) >= md.maxLocks {
			return txnlock.ErrLockLimit
		}
		holders = map[txnlock.TxnID]txnlock.Mode{}
		md.locks[k] = holders
	}
	holders[req.Txn] = holders[req.Txn].Max(req.Mode)
	return nil
}

func (md *model) unlock(txn txnlock.TxnID, cf txnlock.ColumnFamily, r txnlock.Range) error {
	switch {
	case md.closed:
		return txnlock.ErrClosed
	case !txn.Valid():
		return txnlock.ErrInvalidTxn
	}
	key, err := pointKey(&r)
	if err != nil {
		return err
	}
	if !md.cfs[cf] {
		return txnlock.ErrUnknownColumnFamily
	}
	k := modelKey{cf, string(key)}
	if _, ok := md.locks[k][txn]; !ok {
		return txnlock.ErrNotHeld
	}
	delete(md.locks[k], txn)
	if len(md.locks[k]) == 0 {
		delete(md.locks, k)
	}
	return nil
}

func (md *model) unlockAll(txn txnlock.TxnID) error {
	switch {
	case md.closed:
		return txnlock.ErrClosed
	case !txn.Valid():
		return txnlock.ErrInvalidTxn
	}
	for k, h := range md.locks {
		delete(h, txn)
		if len(h) == 0 {
			delete(md.locks, k)
		}
	}
	return nil
}

func (md *model) addCF(cf txnlock.ColumnFamily) error {
	switch {
	case md.closed:
		return txnlock.ErrClosed
	case cf < 0:
		return txnlock.ErrUnknownColumnFamily
	case md.cfs[cf]:
		return txnlock.ErrColumnFamilyExists
	}
	md.cfs[cf] = true
	return nil
}

func (md *model) dropCF(cf txnlock.ColumnFamily) error {
	switch {
	case md.closed:
		return txnlock.ErrClosed
	case !md.cfs[cf]:
		return txnlock.ErrUnknownColumnFamily
	case cf == txnlock.DefaultColumnFamily:
		return txnlock.ErrColumnFamilyInUse
	}
	for k := range md.locks {
		if k.cf == cf {
			return txnlock.ErrColumnFamilyInUse
		}
	}
	delete(md.cfs, cf)
	return nil
}

func (md *model) close() error {
	if md.closed {
		return txnlock.ErrClosed
	}
	md.closed = true
	clear(md.locks)
	return nil
}

// status renders the model's locks like Status.String.
func (md *model) status() string {
	var s txnlock.Status
	for k, h := range md.locks {
		ls := txnlock.LockStatus{CF: k.cf, Range: txnlock.Point([]byte(k.key))}
		for t, m := range h {
			ls.Holders = append(ls.Holders, t)
			ls.Mode = ls.Mode.Max(m)
		}
		slices.Sort(ls.Holders)
		s.Locks = append(s.Locks, ls)
	}
	s.Sort()
	return s.String()
}

const (
	ctxOK = iota
	ctxNil
	ctxCancelled
)

// checkSame fails unless got wraps want (or both are nil), as a
// *txnlock.LockError.
func checkSame(t testing.TB, step string, want, got error) {
	t.Helper()
	if want == nil {
		require.NoError(t, got, step)
		return
	}
	require.ErrorIs(t, got, want, step)
	var le *txnlock.LockError
	require.True(t, errors.As(got, &le), "%s: %T is not a *LockError", step, got)
}

// FuzzAPI drives random sequences of API calls — valid and invalid — and
// checks every result and the whole lock table against the model.
func FuzzAPI(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 2, 0, 2, 1, 1, 1, 1})
	f.Add([]byte{0, 1, 1, 1, 1, 0, 2, 1, 1, 2, 1, 3, 1, 5, 4, 1})
	f.Add([]byte{6, 3, 0, 7, 0, 1, 2, 1, 2, 2, 4, 2, 8, 9, 10, 11, 12, 13})
	f.Add([]byte{3, 2, 0, 2, 2, 1, 2, 4, 2, 1, 2, 0, 0, 0, 0, 5, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		runAPISequence(t, data)
	})
}

func runAPISequence(t testing.TB, data []byte) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	maxLocks := next() % 4 // 0: unlimited
	opts := Options{MaxLocks: maxLocks, Stripes: 1 << (next() % 3)}
	opts.LockTimeout = txnlock.NoWait
	m, err := New(opts)
	require.NoError(t, err)
	if next()%2 == 1 {
		m.hashMask = 1 // chains of colliding keys
	}
	md := newModel(maxLocks)
	keys := []string{"a", "b", "", "k\x00"}
	txnOf := func(b int) txnlock.TxnID { return txnlock.TxnID(b % 4) } // 0 is invalid
	cfOf := func(b int) txnlock.ColumnFamily { return txnlock.ColumnFamily(b%4 - 1) }
	rangeOf := func(b int) txnlock.Range {
		switch b % 8 {
		case 6:
			return txnlock.Range{}
		case 7:
			r, _ := txnlock.Inclusive([]byte("a"), []byte("b"))
			return r
		}
		return txnlock.Point([]byte(keys[b%4]))
	}
	for step := 0; len(data) > 0 && step < 200; step++ {
		op := next() % 8
		var want, got error
		var desc string
		switch op {
		case 0, 1, 2: // Lock, mostly
			b := next()
			req := txnlock.Request{Txn: txnOf(b), CF: cfOf(b >> 2), Range: rangeOf(next()), Mode: txnlock.Mode(next() % 3)}
			ctxState := ctxOK
			switch x := next(); {
			case x%16 == 14:
				ctxState = ctxNil
			case x%16 == 15:
				ctxState = ctxCancelled
			case x%16 == 13:
				req.Timeout = -5
			case x%2 == 0:
				req.Timeout = txnlock.NoWait
			}
			ctx := context.Background()
			switch ctxState {
			case ctxNil:
				ctx = nil
			case ctxCancelled:
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			desc = fmt.Sprintf("lock %v ctx=%d", req, ctxState)
			want = md.lock(ctxState, req)
			got = m.Lock(ctx, req)
		case 3, 4:
			b := next()
			txn, cf, r := txnOf(b), cfOf(b>>2), rangeOf(next())
			desc = fmt.Sprintf("unlock %v %v %v", txn, cf, r)
			want, got = md.unlock(txn, cf, r), m.Unlock(txn, cf, r)
		case 5:
			txn := txnOf(next())
			desc = fmt.Sprintf("unlock all %v", txn)
			want, got = md.unlockAll(txn), m.UnlockAll(txn)
		case 6:
			b := next()
			cf := cfOf(b)
			if b&16 != 0 {
				desc = fmt.Sprintf("drop %v", cf)
				want, got = md.dropCF(cf), m.DropColumnFamily(cf)
			} else {
				desc = fmt.Sprintf("add %v", cf)
				want, got = md.addCF(cf), m.AddColumnFamily(cf)
			}
		case 7:
			if next()%8 == 0 {
				desc = "close"
				want, got = md.close(), m.Close()
			}
		}
		step := fmt.Sprintf("step %d: %s", step, desc)
		checkSame(t, step, want, got)
		require.Equal(t, md.status(), m.Status().String(), step)
		if !md.closed {
			require.Equal(t, int64(len(md.locks)), m.Stats().CurrentLocks, step)
		}
	}
	if !md.closed {
		require.NoError(t, m.Close())
	}
}

// TestAPIRandom runs the fuzz target's sequences on pseudo-random inputs, so
// that plain `go test` covers more than the inputs in testdata/fuzz.
func TestAPIRandom(t *testing.T) {
	rng := newRand(t)
	for i := 0; i < 2000; i++ {
		data := make([]byte, 20+rng.IntN(300))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		runAPISequence(t, data)
	}
}
