package oss

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The adapter honours proxy variables like libcurl does; loopback
	// test servers must never go through one.
	os.Setenv("NO_PROXY", "127.0.0.1,localhost")
	os.Setenv("no_proxy", "127.0.0.1,localhost")
	goleak.VerifyTestMain(m)
}
