package sbtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind (a waiter
// never woken, a detector or Pebble DB never closed). One Pebble goroutine
// is exempt: a pebble.Open that fails on disk (TestOptions makes one) does
// not stop the disk-health ticker it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/cockroachdb/pebble/v2/vfs.(*diskHealthCheckingFS).startTickerLocked.func1"))
}
