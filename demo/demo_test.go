package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var prog bytes.Buffer
	rep, err := Run(ctx, Options{Objects: 24, MinSize: 3000, MaxSize: 300 << 10, Batch: 5, Progress: LineProgress(&prog)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", prog.String(), out.String())
	if !rep.OK() || rep.Verified != 24 || rep.VerifiedBytes != rep.Bytes {
		t.Fatalf("report not OK: verified %d objects, %d of %d bytes", rep.Verified, rep.VerifiedBytes, rep.Bytes)
	}
	if !strings.Contains(out.String(), "verified:  all 24 objects") {
		t.Fatalf("report does not say all objects were verified:\n%s", out.String())
	}
	if got := rep.Transports["tcp"]; got["write"] < uint64(rep.Bytes) || got["read"] < uint64(rep.Bytes) {
		t.Fatalf("tcp moved %v, want at least %d each way", got, rep.Bytes)
	}
}
