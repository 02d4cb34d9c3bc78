//go:build !linux || !cgo

package verbs

// System returns the libibverbs provider. This build has no cgo or is not
// Linux, so every call returns ErrNotSupported.
func System() Provider { return stubProvider{} }

type stubProvider struct{}

func (stubProvider) Devices() ([]DeviceInfo, error) { return nil, ErrNotSupported }

func (stubProvider) Open(string) (Device, error) { return nil, ErrNotSupported }
