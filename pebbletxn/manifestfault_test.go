package pebbletxn

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
	"github.com/txnlock/txnlock"
	"github.com/txnlock/txnlock/internal/testenv"
	"github.com/txnlock/txnlock/pointlock"
)

// manifestChildEnv turns the test binary into the child of
// TestFailingManifest: its value is "dir,round".
const manifestChildEnv = "PEBBLETXN_MANIFEST_CHILD"

// manifestChild runs Sync transfers on dir, printing each log sequence
// number after its Commit returned; after a random number of commits every
// write and sync of a MANIFEST fails, and it flushes. Pebble stops the
// process from a background goroutine, or a call returns a FatalError
// (then the child exits with status 3).
func manifestChild(arg string) {
	dir, r, _ := strings.Cut(arg, ",")
	round, _ := strconv.Atoi(r)
	var failing atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && strings.Contains(op.Path, "MANIFEST-") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	})
	mgr, err := pointlock.New(pointlock.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	db, err := Open(dir, OpenOptions{
		Options: Options{Manager: mgr, Sync: true},
		Pebble:  &pebble.Options{FS: errorfs.Wrap(vfs.Default, inj), Logger: quiet{}, MemTableSize: 256 << 10},
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(uint64(round), 13))
	failAt := 50 + rng.IntN(300)
	seq := uint64(round) << 32
	for n := 0; ; n++ {
		if n == failAt {
			failing.Store(true)
			go db.Pebble().Flush()
		}
		seq++
		err := logTransfer(db, rng, seq)
		var fe *FatalError
		switch {
		case err == nil:
			fmt.Println(seq)
		case errors.As(err, &fe):
			fmt.Println("fatal", err)
			os.Exit(3)
		default:
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
}

// A failing MANIFEST: a child process commits Sync transfers and prints
// each one after its Commit returned; then every MANIFEST write fails.
// Pebble calls Logger.Fatalf from its flush goroutine, where no call can
// recover it, and the process stops (or, when a call is the one that
// meets the failure, it gets a FatalError and the child exits). The
// store, reopened, has every printed commit and the same total.
func TestFailingManifest(t *testing.T) {
	if arg := os.Getenv(manifestChildEnv); arg != "" {
		manifestChild(arg)
		return
	}
	rounds := 4 * testenv.ReliabilityScale(t)
	dir := t.TempDir()
	db, err := Open(dir, OpenOptions{Options: Options{Manager: newManager(t, kindPoint, 0, nil), Sync: true}, Pebble: &pebble.Options{Logger: quiet{}}})
	require.NoError(t, err)
	init := begin(t, db)
	for i := range plAccounts {
		require.NoError(t, init.Put(bg, txnlock.DefaultColumnFamily, acct(i), []byte(strconv.Itoa(plInitial))))
	}
	require.NoError(t, init.Commit())
	require.NoError(t, db.Close())

	exits := map[string]int{}
	total := 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFailingManifest$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", manifestChildEnv, dir, round+1))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var printed []uint64
		var last string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if seq, err := strconv.ParseUint(sc.Text(), 10, 64); err == nil {
				printed = append(printed, seq)
			} else {
				last = sc.Text()
			}
		}
		err = cmd.Wait()
		require.Error(t, err, "round %d: the child ended without a failure", round)
		require.NotContains(t, last, "error ", "round %d: the child failed otherwise", round)
		exits[err.Error()]++
		total += len(printed)

		db, err := Open(dir, OpenOptions{Options: Options{Manager: newManager(t, kindPoint, 0, nil)}, Pebble: &pebble.Options{Logger: quiet{}}})
		require.NoError(t, err, "round %d", round)
		txn := begin(t, db)
		require.Equal(t, plAccounts*plInitial, accountsTotal(t, txn), "round %d", round)
		for _, s := range printed {
			_, found, err := txn.Get(txnlock.DefaultColumnFamily, logKey(s))
			require.NoError(t, err)
			require.True(t, found, "round %d: acknowledged commit %d lost", round, s)
		}
		require.NoError(t, txn.Rollback())
		require.NoError(t, db.Close())
	}
	t.Logf("%d MANIFEST failures in child processes (exits: %v), %d acknowledged Sync commits, 0 lost", rounds, exits, total)
}
