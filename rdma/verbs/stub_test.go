//go:build !linux || !cgo

package verbs

import (
	"errors"
	"testing"
)

// TestStubConsistency runs on builds without cgo (CGO_ENABLED=0 go test):
// every entry point returns ErrNotSupported and nothing panics.
func TestStubConsistency(t *testing.T) {
	p := System()
	if d, err := p.Devices(); d != nil || !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Devices() = %v, %v", d, err)
	}
	for _, name := range []string{"", "mlx5_0"} {
		if d, err := p.Open(name); d != nil || !errors.Is(err, ErrNotSupported) {
			t.Fatalf("Open(%q) = %v, %v", name, d, err)
		}
	}
	if err := Probe(); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Probe() = %v", err)
	}
	if LiveHandles() != 0 {
		t.Fatal("stub opened handles")
	}
}
