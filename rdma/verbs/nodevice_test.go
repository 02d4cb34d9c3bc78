package verbs

import (
	"errors"
	"os"
	"testing"
)

// hasDevices reports whether this machine has RDMA devices; the no-device
// tests only make sense without them.
func hasDevices() bool {
	_, err := System().Devices()
	return err == nil
}

func TestNoDevice(t *testing.T) {
	if hasDevices() {
		t.Skip("machine has RDMA devices")
	}
	devs, err := System().Devices()
	if err == nil || devs != nil {
		t.Fatalf("Devices() = %v, %v; want nil and an error", devs, err)
	}
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Devices() error %v does not match ErrNotSupported", err)
	}
	if cgoBuild && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Devices() error %v does not match ErrNoDevice", err)
	}
	d, err := System().Open("mlx5_0")
	if d != nil || !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Open() = %v, %v; want nil, ErrNotSupported", d, err)
	}
}

func TestProbeExplainsNoDevice(t *testing.T) {
	if hasDevices() {
		t.Skip("machine has RDMA devices")
	}
	err := Probe()
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Probe() = %v; want ErrNotSupported", err)
	}
	if cgoBuild && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Probe() = %v; want ErrNoDevice", err)
	}
	if err2 := Probe(); err2 != err {
		t.Fatalf("Probe is not cached: %v then %v", err, err2)
	}
	t.Logf("Probe: %v", err)
}

// fakeProvider lists devices without opening any, to drive probe's later
// checks.
type fakeProvider struct{ devs []DeviceInfo }

func (f fakeProvider) Devices() ([]DeviceInfo, error) { return f.devs, nil }
func (f fakeProvider) Open(string) (Device, error)    { return nil, ErrDeviceNotFound }

func TestProbeChecksUverbsAndMemlock(t *testing.T) {
	err := probe(fakeProvider{})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("probe(no devices) = %v; want ErrNoDevice", err)
	}
	err = probe(fakeProvider{devs: []DeviceInfo{{Name: "mlx5_0"}}})
	if _, statErr := os.Stat("/dev/infiniband"); statErr != nil {
		if !errors.Is(err, ErrNotSupported) || err == nil {
			t.Fatalf("probe without /dev/infiniband = %v; want ErrNotSupported", err)
		}
	}
	if err := checkMemlock(8<<20, false); err == nil {
		t.Fatal("checkMemlock(8 MiB, unprivileged) passed; want an error")
	}
	if err := checkMemlock(8<<20, true); err != nil {
		t.Fatalf("checkMemlock(privileged) = %v", err)
	}
	if err := checkMemlock(^uint64(0), false); err != nil {
		t.Fatalf("checkMemlock(unlimited) = %v", err)
	}
}
