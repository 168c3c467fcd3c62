package pebbletxn

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
)

// modelKeys are the keys the model test uses: neighbours in byte order
// ("a" < "a\x00" < "a\x00\x00" < "ab"), the empty key, and 0xff bytes, to
// exercise the bound arithmetic at column-family edges.
var modelKeys = []string{"", "\x00", "a", "a\x00", "a\x00\x00", "ab", "b", "\xff", "\xff\xff"}

// FuzzTxnModel runs a stream of operations (put, delete, get, scan with
// every kind of endpoint, commit, rollback) on two column families and
// compares every read with a map model: committed data plus the open
// transaction's writes.
func FuzzTxnModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0, 2, 0, 4, 1, 1, 3, 0, 5, 9, 9, 9, 4, 2, 0, 7, 7, 3, 1, 6, 6, 0})
	f.Add([]byte("a stream of operations on two column families"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		e := openMem(t, kindRange)
		other, err := e.db.CreateColumnFamily("other")
		require.NoError(t, err)
		cfs := []txnlock.ColumnFamily{txnlock.DefaultColumnFamily, other}
		committed := []map[string]string{{}, {}}
		pending := []map[string]*string{{}, {}}
		txn := begin(t, e.db)
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		view := func(c int) map[string]string {
			v := maps.Clone(committed[c])
			for k, p := range pending[c] {
				if p == nil {
					delete(v, k)
				} else {
					v[k] = *p
				}
			}
			return v
		}
		// bound reads one end of a range from b: before or after a key,
		// or open.
		bound := func(b byte, open txnlock.Bound) txnlock.Bound {
			k := []byte(modelKeys[int(b>>2)%len(modelKeys)])
			switch b & 3 {
			case 0:
				return txnlock.BoundBefore(k)
			case 1:
				return txnlock.BoundAfter(k)
			}
			return open
		}
		for n := 0; len(ops) > 0; n++ {
			op, c := next(), int(next()%2)
			key := modelKeys[int(next())%len(modelKeys)]
			switch op % 7 {
			case 0, 1: // put
				val := string(rune('A' + n%26))
				require.NoError(t, txn.Put(bg, cfs[c], []byte(key), []byte(val)))
				pending[c][key] = &val
			case 2: // delete
				require.NoError(t, txn.Delete(bg, cfs[c], []byte(key)))
				pending[c][key] = nil
			case 3: // get
				v, found, err := txn.Get(cfs[c], []byte(key))
				require.NoError(t, err)
				want, ok := view(c)[key]
				require.Equal(t, ok, found, "get %q", key)
				require.Equal(t, want, string(v))
			case 4: // scan
				r, err := txnlock.NewRange(bound(next(), txnlock.NegInf()), bound(next(), txnlock.PosInf()))
				if err != nil {
					continue
				}
				var got []string
				require.NoError(t, txn.Scan(cfs[c], r, func(k, v []byte) bool {
					got = append(got, string(k)+"="+string(v))
					return true
				}))
				var want []string
				v := view(c)
				for _, k := range slices.Sorted(maps.Keys(v)) {
					if r.Contains([]byte(k)) {
						want = append(want, k+"="+v[k])
					}
				}
				require.Equal(t, want, got, "scan %v", r)
			case 5: // commit
				require.NoError(t, txn.Commit())
				for i := range committed {
					committed[i] = view(i)
					pending[i] = map[string]*string{}
				}
				txn = begin(t, e.db)
			case 6: // rollback
				require.NoError(t, txn.Rollback())
				pending = []map[string]*string{{}, {}}
				txn = begin(t, e.db)
			}
		}
		require.NoError(t, txn.Rollback())
	})
}
