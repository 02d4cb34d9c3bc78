package main

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/httpstore"
)

// TestMetadataServerCommand runs `ferry metadata-server` in process on a
// free loopback port, uses it through httpstore, then stops it with
// SIGTERM and expects a clean exit.
func TestMetadataServerCommand(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	line, done := startCmd(t, "metadata-server", "--addr", "127.0.0.1:0", "--path", "/md/v1", "--log-level", "error")
	u := strings.TrimSpace(strings.TrimPrefix(line, "metadata-server listening on "))
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/md/v1") {
		t.Fatalf("listen line %q", line)
	}

	s, err := httpstore.Open(u, httpstore.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := metadata.NewKeys("c1")
	k := keys.RPCMeta("node a")
	v := []byte(`{"ip_or_host_name":"127.0.0.1","rpc_port":15001}`)
	if err := s.Put(ctx, k, v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, k)
	if err != nil || string(got) != string(v) {
		t.Fatalf("Get: %q, %v", got, err)
	}
	if d, err := metadata.DecodeRPCMeta(got); err != nil || d.Addr() != "127.0.0.1:15001" {
		t.Fatalf("DecodeRPCMeta: %v, %v", d, err)
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	// The server answers only on its path.
	other, err := httpstore.Open(strings.TrimSuffix(u, "/md/v1")+"/metadata", httpstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put(ctx, k, v); !errors.Is(err, metadata.ErrStore) {
		t.Fatalf("Put on another path: %v, want ErrStore", err)
	}
	// A request without a key is refused.
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET without a key: %d, want 400", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
	other.Close()
	s.Close()

	stopWithSIGTERM(t, "metadata-server", done)
}

func TestMetadataServerRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--path", "metadata"},
		{"--path", "/m?x=1"},
		{"--addr", "nocolon"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"metadata-server"}, args...))
		root.SetOut(io.Discard)
		err := root.Execute()
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want a usage error naming the flag", args, err)
		}
	}
	// An address that cannot be listened on is a run-time failure.
	root := newRootCmd()
	root.SetArgs([]string{"metadata-server", "--addr", "127.0.0.1:99999"})
	root.SetOut(io.Discard)
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "metadata-server") {
		t.Errorf("unlistenable address: %v", err)
	}
}

func TestMetadataServerOptionsFromEnv(t *testing.T) {
	t.Setenv("MC_METADATA_HTTP_TOKEN", "tok")
	t.Setenv("MC_METADATA_MAX_KEYS", "99999999999")
	t.Setenv("MC_METADATA_MAX_TOTAL_BYTES", " 4096 ")
	o, err := metaServerOptions()
	if err != nil || o.Token != "tok" || o.MaxKeys != math.MaxInt32 || o.MaxTotalBytes != 4096 {
		t.Fatalf("%+v %v", o, err)
	}
	t.Setenv("MC_METADATA_MAX_KEYS", "-3")
	if _, err := metaServerOptions(); err == nil || !strings.Contains(err.Error(), "MC_METADATA_MAX_KEYS") {
		t.Fatalf("a negative budget: %v", err)
	}
}
