package staging

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestArena returns a locked arena of size bytes, or an unlocked one
// when this user may not lock that much (tests stay within 8 MiB).
func newTestArena(t testing.TB, opts Options) *Arena {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	a, err := New(opts)
	var me *MemlockError
	if errors.As(err, &me) {
		t.Logf("running unlocked: %v", err)
		opts.Unlocked = true
		a, err = New(opts)
	}
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := a.ForceClose(); err != nil {
			t.Errorf("ForceClose: %v", err)
		}
	})
	return a
}
