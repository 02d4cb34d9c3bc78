package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

// TestDefaultsWithoutRDMA checks how the default transports behave on a
// machine without RDMA: auto and forced TCP run on TCP, and forced RDMA
// fails with an error that says why.
func TestDefaultsWithoutRDMA(t *testing.T) {
	if err := verbs.Probe(); err == nil {
		t.Skip("this machine has a usable RDMA device")
	}
	for _, proto := range []string{"", "tcp"} {
		e, err := New(Config{LocalServerName: "127.0.0.1", Protocol: proto})
		if err != nil {
			t.Fatalf("protocol %q: %v", proto, err)
		}
		if got := e.Transports(); len(got) != 1 || got[0] != "tcp" {
			t.Errorf("protocol %q: transports %v, want [tcp]", proto, got)
		}
		e.Close()
	}
	_, err := New(Config{LocalServerName: "127.0.0.1", Protocol: "rdma"})
	if !errors.Is(err, ErrNoTransport) {
		t.Fatalf("forced rdma without a device: %v, want ErrNoTransport", err)
	}
	if !strings.Contains(err.Error(), "rdma") {
		t.Errorf("error %q does not say RDMA was the missing piece", err)
	}
}
