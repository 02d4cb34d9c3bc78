package verbs

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if n := LiveHandles(); n != 0 {
			fmt.Fprintf(os.Stderr, "verbs: %d handles leaked\n", n)
			code = 99
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
