package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Keep go-redis's dial-failure lines out of the test output; the
	// fault tests provoke many.
	SetClientLogger(nil)
	goleak.VerifyTestMain(m)
}
