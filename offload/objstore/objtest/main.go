package objtest

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// LoopbackTestMain is a TestMain for adapter packages: it sets NO_PROXY
// and no_proxy to loopback first (net/http reads the proxy variables once
// per process, and the adapters honour them as libcurl does, so loopback
// test servers must never go through a proxy), then runs m under
// goleak.VerifyTestMain, which exits the process.
func LoopbackTestMain(m *testing.M) {
	os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	os.Setenv("no_proxy", "127.0.0.1,localhost")
	goleak.VerifyTestMain(m)
}
