//go:build linux

package demo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// childEnv marks the re-executed test binary that runs the demo as an
// unprivileged user.
const childEnv = "FERRY_DEMO_MEMLOCK_CHILD"

// TestUnprivilegedFallsBackToUnlocked runs the demo as user nobody with
// RLIMIT_MEMLOCK at 64 KiB (a newcomer's shell, tighter than the usual
// 8 MiB): it must finish, verify every byte, report unlocked staging and
// say so in exactly one log line.
func TestUnprivilegedFallsBackToUnlocked(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		runUnprivilegedChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to user nobody; as a non-root user the other demo tests already run with your own memlock limit")
	}
	setpriv, err1 := exec.LookPath("setpriv")
	prlimit, err2 := exec.LookPath("prlimit")
	if err1 != nil || err2 != nil {
		t.Skip("needs setpriv and prlimit (util-linux)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's build directory is private to root: run a copy
	// from a directory nobody can read.
	dir, err := os.MkdirTemp("", "ferry-demo-memlock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "demo.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		err = errors.Join(err, dst.Close())
	}
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		prlimit, "--memlock=65536:65536", "--", bin, "-test.run=^TestUnprivilegedFallsBackToUnlocked$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR=/tmp", "HOME=/tmp")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("unprivileged demo: %v\n%s", err, out.String())
	}
	t.Logf("child:\n%s", out.String())
	if !strings.Contains(out.String(), "--- PASS") {
		t.Fatalf("unprivileged demo did not pass:\n%s", out.String())
	}
}

func runUnprivilegedChild(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("child still runs as root")
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rep, err := Run(context.Background(), Options{Objects: 16, MinSize: 4096, MaxSize: 256 << 10, Batch: 4, Logger: log})
	if err != nil {
		t.Fatalf("Run: %v\nlogs:\n%s", err, logs.String())
	}
	if !rep.OK() || !rep.Unlocked {
		t.Fatalf("report: ok %v, unlocked %v", rep.OK(), rep.Unlocked)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, "lock") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "unlocked memory") {
		t.Fatalf("want exactly one log line about the memlock fallback, got %d:\n%s", len(lines), logs.String())
	}
	t.Logf("fallback notice: %s", lines[0])
}
