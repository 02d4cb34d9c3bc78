package oss

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

const faultPrefix = "test-prefix"

// faultEnv is the reference fault configuration for a server URL.
func faultEnv(url string, maxConn int) map[string]string {
	return map[string]string{
		EnvEndpoint: url, EnvBucket: "fault-bucket", EnvRegion: "fault-region",
		EnvPathStyle: "true", EnvAnonymous: "true", "MOONCAKE_OSS_MAX_CONNECTIONS": strconv.Itoa(maxConn),
		EnvAccessKeyID: "fault-test-id", EnvAccessSecret: "fault-test-secret", EnvSecurityToken: "fault-test-token",
	}
}

// newFault starts a fault server and an initialised adapter against it.
func newFault(t *testing.T, maxConn int, opts ...func(*Options)) (*objtest.Server, *Adapter) {
	t.Helper()
	srv := objtest.NewServer(t)
	o := Options{Lookup: objstore.MapLookup(faultEnv(srv.URL(), maxConn)), Prefix: faultPrefix}
	for _, f := range opts {
		f(&o)
	}
	a := New(o)
	if err := a.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return srv, a
}

func shortTimeout(d time.Duration) func(*Options) {
	return func(o *Options) { *o = withRequestTimeout(*o, d) }
}

// guarded is a 7-byte buffer of '!' whose middle 5 bytes are handed out.
type guarded struct{ b []byte }

func newGuarded() *guarded { return &guarded{bytes.Repeat([]byte("!"), 7)} }

func (g *guarded) buf() []byte { return g.b[1:6:6] }

func (g *guarded) check(t *testing.T) {
	t.Helper()
	if g.b[0] != '!' || g.b[6] != '!' {
		t.Fatalf("guard bytes touched: %q", g.b)
	}
}

func wantCode(t *testing.T, what string, err error, want objstore.Code) {
	t.Helper()
	if got := objstore.CodeOf(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
	if want != objstore.CodeOK && !errors.Is(err, want.Sentinel()) {
		t.Fatalf("%s: errors.Is(%v, %v) is false", what, err, want.Sentinel())
	}
}

func slowTests() bool { return os.Getenv("FERRY_SLOW_TESTS") == "1" }

func hasHeader(wire, line string) bool {
	return strings.Contains(strings.ToLower(wire), "\r\n"+strings.ToLower(line)+"\r\n")
}

var ctx = context.Background()
