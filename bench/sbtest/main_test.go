package sbtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind (a waiter
// never woken, a detector or Pebble DB never closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
