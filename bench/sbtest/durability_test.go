package sbtest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// On disk with Sync: a committed transaction survives closing and
// reopening the DB; an uncommitted one leaves no trace.
func TestDiskReopen(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, Sync: true, Lock: LockRange, TableSize: 50, Layout: LayoutPerIndex}
	db, err := Open(opts)
	require.NoError(t, err)
	require.NoError(t, db.Prepare(bg))
	committed := db.Begin()
	require.NoError(t, writeOnly(committed, 1, 2, 3, 777))
	require.NoError(t, committed.Commit())
	pending := db.Begin()
	_, err = pending.Delete(bg, 1, 10)
	require.NoError(t, err)
	require.NoError(t, pending.Insert(bg, 1, Row{ID: 1000, K: 1}))
	require.NoError(t, db.Close())

	db, err = Open(opts)
	require.NoError(t, err)
	defer db.Close()
	tx := db.Begin()
	r, found, err := tx.PointSelect(bg, 1, 3)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, int64(777), r.K, "the committed re-insert survived")
	_, found, err = tx.PointSelect(bg, 1, 10)
	require.NoError(t, err)
	require.True(t, found, "the uncommitted delete left no trace")
	_, found, err = tx.PointSelect(bg, 1, 1000)
	require.NoError(t, err)
	require.False(t, found, "the uncommitted insert left no trace")
	id, err := tx.InsertAuto(bg, 1, 1, "", "")
	require.NoError(t, err)
	require.Equal(t, int64(51), id, "auto-increment resumes after the greatest id")
	require.NoError(t, tx.Rollback())
	rep := verify(t, db)
	require.Equal(t, int64(50), rep.Rows)
}

// crashEnv names the environment variable that turns the test binary into
// the crash test's child: its value is the DB directory.
const crashEnv = "SBTEST_CRASH_CHILD_DIR"

// crashChild commits transactions forever, printing each one's id after
// its Commit returned. The parent kills it.
func crashChild(dir string) {
	db, err := Open(Options{Dir: dir, Sync: true, Lock: LockRange, TableSize: 50})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for id := int64(1000); ; id++ {
		tx := db.Begin()
		err := tx.Insert(bg, 1, Row{ID: id, K: rng.Int64N(50), C: RandomC(rng), Pad: RandomPad(rng)})
		if err == nil {
			_, err = tx.UpdateIndex(bg, 1, 1+rng.Int64N(50))
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(id) // os.Stdout is unbuffered
	}
}

// A child process commits transactions (Sync) and prints each id after its
// commit returned; the test SIGKILLs it after some ids, reopens the DB, and
// finds every printed id and a consistent table.
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, TableSize: 50})
	require.NoError(t, err)
	require.NoError(t, db.Prepare(bg))
	require.NoError(t, db.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	const want = 40
	var printed []int64
	sc := bufio.NewScanner(out)
	for len(printed) < want && sc.Scan() {
		id, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			continue // test framework output, or the child's error line
		}
		printed = append(printed, id)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Len(t, printed, want, "the child stopped early")

	db, err = Open(Options{Dir: dir, TableSize: 50})
	require.NoError(t, err)
	defer db.Close()
	tx := db.Begin()
	for _, id := range printed {
		_, found, err := tx.PointSelect(bg, 1, id)
		require.NoError(t, err)
		require.True(t, found, "committed id %d lost", id)
	}
	rep := verify(t, db)
	require.GreaterOrEqual(t, rep.Rows, int64(50+want))
	t.Logf("after SIGKILL: %d ids printed, %d rows, table consistent", want, rep.Rows)
}
