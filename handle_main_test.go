package txnlock_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind (a lock
// wait never ended, a detector never closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
