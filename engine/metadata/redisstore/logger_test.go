package redisstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestSetClientLogger(t *testing.T) {
	var buf bytes.Buffer
	SetClientLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	defer SetClientLogger(nil)
	addr := freeAddr(t)
	if s, err := Open(context.Background(), addr, Options{DialTimeout: time.Second}); err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	out := buf.String()
	if !strings.Contains(out, "component=go-redis") || !strings.Contains(out, addr) {
		t.Fatalf("go-redis dial failure not logged through slog: %q", out)
	}
}
