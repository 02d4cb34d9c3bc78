package verbstest

import (
	"fmt"
	"testing"

	"github.com/ferrylabs/ferry/rdma/verbs"
)

func TestSkipIfNotSupported(t *testing.T) {
	var ran bool
	t.Run("nil", func(t *testing.T) { SkipIfNotSupported(t, nil); ran = true })
	if !ran {
		t.Fatal("nil error skipped the test")
	}
	for _, err := range []error{verbs.ErrNotSupported, verbs.ErrNoDevice, fmt.Errorf("open: %w", verbs.ErrNoDevice)} {
		var after bool
		var sub *testing.T
		t.Run("skip", func(t *testing.T) {
			sub = t
			SkipIfNotSupported(t, err)
			after = true
		})
		if after || !sub.Skipped() {
			t.Fatalf("%v did not skip", err)
		}
	}
}

func TestProbeOrSkip(t *testing.T) {
	SkipIfNotSupported(t, verbs.Probe())
	devs, err := verbs.System().Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Probe passed but Devices() = %v, %v", devs, err)
	}
}
