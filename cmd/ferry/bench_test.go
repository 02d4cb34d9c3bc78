package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestBenchCommandLoopback(t *testing.T) {
	out, _, err := runFerry(t, "", "bench", "--loopback", "--protocol=tcp", "--duration=1", "--buffer_size=8MiB",
		"--threads=2", "--batch_size=8", "--block_size=64KiB", "--operation=read", "--baseline")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Test completed: duration 1\.\d\d, batch count [1-9]\d*, throughput \d+\.\d\d GB/s$`).MatchString(out) {
		t.Fatalf("no closing line in:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^Raw TCP loopback: throughput \d+\.\d\d GB/s; ferry/raw = \d+%$`).MatchString(out) {
		t.Fatalf("no baseline line in:\n%s", out)
	}
}

func TestBenchCommandSweep(t *testing.T) {
	out, _, err := runFerry(t, "", "bench", "--loopback", "--protocol=tcp", "--duration=1", "--buffer_size=8MiB",
		"--batch_size=16", "--sweep", "--sweep_blocks=4KiB,64KiB", "--sweep_threads=1,2", "--operation=write")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "p999") || !strings.Contains(lines[4], "64KiB") {
		t.Fatalf("sweep table:\n%s", out)
	}
}

func TestBenchCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--protocol=tcp"}, // initiator without --segment_id
		{"--protocol=tcp", "--loopback", "--block_size=12x"},
		{"--protocol=tcp", "--loopback", "--buffer_size=1MiB"},
		{"--protocol=rdma", "--loopback", "--baseline"},
		{"--mode=server"},
	} {
		_, _, err := runFerry(t, "", append([]string{"bench"}, args...)...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
}

func TestBenchCommandRDMAHint(t *testing.T) {
	_, _, err := runFerry(t, "", "bench", "--loopback", "--protocol=rdma", "--buffer_size=1MiB", "--threads=1", "--batch_size=1", "--duration=1")
	if err == nil {
		t.Skip("this machine has RDMA")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "--protocol=tcp") {
		t.Fatalf("want a one-line reason with a hint, got %q", msg)
	}
}
