package pointlock

import (
	"flag"
	"math/rand/v2"
	"testing"

	"go.uber.org/goleak"
)

var (
	long = flag.Bool("long", false, "run the long randomized tests")
	seed = flag.Uint64("seed", 0, "seed of the randomized tests (0: random)")
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRand returns a random generator and logs its random seed for replay.
func newRand(t testing.TB) *rand.Rand {
	s := *seed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return rand.New(rand.NewPCG(s, s))
}

func newRandSeed(s uint64) *rand.Rand { return rand.New(rand.NewPCG(s, s)) }
