package s3

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// net/http reads the proxy variables once per process; loopback test
	// servers must never go through a proxy.
	os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	os.Setenv("no_proxy", "127.0.0.1,localhost")
	goleak.VerifyTestMain(m)
}
