package metadata

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture reads a captured Mooncake frame from <repo root>/../shared.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root not found")
		}
		dir = parent
	}
	b, err := os.ReadFile(filepath.Join(dir, "..", "shared", "fixtures", "mooncake-wire", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}
