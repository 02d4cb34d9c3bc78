package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runDemoCmd runs the ferry root command with args and returns stdout.
func runDemoCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

func TestDemoCommandVerifiesEveryByte(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	out, err := runDemoCmd(t, "demo", "--objects", "10", "--min-size", "4KiB", "--max-size", "96KiB",
		"--batch", "4", "--progress", "lines")
	if err != nil {
		t.Fatalf("ferry demo: %v\n%s", err, out)
	}
	for _, want := range []string{"put: done, 10/10 objects", "get: done, 10/10 objects",
		"transport: tcp", "object-store load", "verified:  all 10 objects"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDemoCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--objects", "0"},
		{"demo", "--min-size", "lots"},
		{"demo", "--max-size", "-4MiB"},
		{"demo", "--min-size", "8MiB", "--max-size", "1MiB"},
		{"demo", "--batch", "0"},
		{"demo", "--store", "ftp://bucket"},
		{"demo", "--progress", "sometimes"},
		{"demo", "--seed", "0"},
	} {
		_, err := runDemoCmd(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

func TestDemoParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "256KiB": 256 << 10, "4MiB": 4 << 20, "4m": 4 << 20,
		"1G": 1 << 30, "3 KB": 3 << 10, "12B": 12} {
		if got, err := demoParseSize(in); err != nil || got != want {
			t.Errorf("demoParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "99999999999999999999"} {
		if _, err := demoParseSize(in); err == nil {
			t.Errorf("demoParseSize(%q) accepted", in)
		}
	}
}
