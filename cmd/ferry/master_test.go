package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// TestMasterCommandServesAndStopsOnSIGTERM runs `ferry master` in process,
// talks to it over gRPC, then sends the process SIGTERM and expects a clean
// exit (the command's signal handler catches it).
func TestMasterCommandServesAndStopsOnSIGTERM(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	line, done := startCmd(t, "master", "--enable_offload", "--rpc_address", "127.0.0.1", "--rpc_port", "0", "--client_ttl", "3", "--log-level", "error")
	addr := strings.TrimSpace(strings.TrimPrefix(line, "master listening on "))

	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := offloadv1.NewMasterServiceClient(conn)
	r, err := c.MountLocalDiskSegment(ctx, &offloadv1.MountLocalDiskSegmentRequest{OwnerId: "o", RpcEndpoint: "127.0.0.1:1", SegmentName: "s", CapacityBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != offloadv1.ErrorCode_ERROR_CODE_OK || r.ClientTtlMs != 3000 {
		t.Fatalf("mount through the command's server: %v", r)
	}

	stopWithSIGTERM(t, "master", done)
	conn.Close()
}

// stopWithSIGTERM sends this process SIGTERM and expects the command
// running in it (named what) to return nil on done within 20 s.
// startCmd runs a long-running ferry command in process and returns its
// first stdout line (its banner) and the channel its result arrives on.
// The rest of its output is discarded.
func startCmd(t *testing.T, args ...string) (string, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(pw)
	root.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() {
		err := root.Execute()
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("%s did not start: %v (%v)", args[0], err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return line, done
}

func stopWithSIGTERM(t *testing.T, what string, done <-chan error) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", what, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop after SIGTERM", what)
	}
}

func TestMasterCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--client_ttl", "0"},
		{"--rpc_port", "70000"},
		{"--default_kv_lease_ttl", "soon"},
		{"--metrics_port", "-1"},
		{"--put_start_release_timeout_sec", "0"},
	} {
		root := newRootCmd()
		root.SetArgs(append([]string{"master"}, args...))
		root.SetOut(io.Discard)
		err := root.Execute()
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err = %v, want a usage error naming the flag", args, err)
		}
	}
}

func TestParseLeaseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"10000": 10 * time.Second, "250ms": 250 * time.Millisecond, "2m": 2 * time.Minute, " 5s ": 5 * time.Second} {
		got, err := parseLeaseTTL(in)
		if err != nil || got != want {
			t.Errorf("parseLeaseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-5s", "x", "0s"} {
		if _, err := parseLeaseTTL(in); err == nil {
			t.Errorf("parseLeaseTTL(%q) accepted", in)
		}
	}
}
