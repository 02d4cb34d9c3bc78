package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferrylabs/ferry/engine/metadata/httpstore"
	"github.com/ferrylabs/ferry/offload/master"
)

// runCmd runs one ferry command in process and returns its stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runCmdIn(t, nil, args...)
}

// runCmdIn is runCmd with stdin.
func runCmdIn(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(append(args, "--log-level", "error"))
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetIn(bytes.NewReader(stdin))
	err := root.Execute()
	return out.String(), err
}

// TestOwnerGetPutLsCommands runs `ferry owner` in process against a real
// master, stores and reads objects with `ferry put` / `ferry get`, lists
// them with `ferry ls`, then stops the owner with SIGTERM and checks that
// it unmounted (its keys are gone from the master at once). It runs in
// P2PHANDSHAKE mode and with the engines finding each other through an
// HTTP metadata server (MOONCAKE_TE_META_DATA_SERVER).
func TestOwnerGetPutLsCommands(t *testing.T) {
	t.Run("p2p", testOwnerGetPutLs)
	t.Run("http-metadata", func(t *testing.T) {
		meta := httpstore.NewServer()
		var mu sync.Mutex
		gets := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				mu.Lock()
				gets[r.URL.Query().Get("key")]++
				mu.Unlock()
			}
			meta.ServeHTTP(w, r)
		}))
		defer srv.Close()
		t.Setenv("MOONCAKE_TE_META_DATA_SERVER", srv.URL+"/metadata")
		testOwnerGetPutLs(t)
		mu.Lock()
		defer mu.Unlock()
		// The requesters found the owner's engine through the store...
		if gets["mooncake/ram/127.0.0.1"] == 0 || gets["mooncake/rpc_meta/127.0.0.1"] == 0 {
			t.Fatalf("no lookup of the owner's keys in the metadata server: %v", gets)
		}
		// ...and every engine removed its keys when it stopped.
		if n := meta.Len(); n != 0 {
			t.Fatalf("%d keys left in the metadata server", n)
		}
	})
}

func testOwnerGetPutLs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	m, err := master.NewServer(master.Config{Options: master.Options{EnableOffload: true}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	maddr := m.Addr().String()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	os.Mkdir(store, 0o755)
	common := []string{"--master", maddr, "--hostname", "127.0.0.1", "--rpc-timeout-ms", "3000"}

	line, done := startCmd(t, append([]string{"owner", "--backend", "file_per_key_storage_backend", "--storage-path", store,
		"--staging-bytes", "16777216", "--unlocked-staging", "--log-level", "error"}, common...)...)
	if !strings.Contains(line, "serving on 127.0.0.1:") {
		t.Fatalf("owner banner: %q", line)
	}

	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	in := filepath.Join(dir, "in.bin")
	os.WriteFile(in, data, 0o644)
	empty := filepath.Join(dir, "empty.bin")
	os.WriteFile(empty, nil, 0o644)
	if _, err := runCmd(t, append([]string{"put", "models/a b", in}, common...)...); err != nil {
		t.Fatalf("put: %v", err)
	}
	if _, err := runCmd(t, append([]string{"put", "models/empty", empty}, common...)...); err != nil {
		t.Fatalf("put empty: %v", err)
	}
	out := filepath.Join(dir, "out.bin")
	if _, err := runCmd(t, append([]string{"get", "models/a b", "-o", out}, common...)...); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Fatalf("get returned %d bytes that differ from the %d put", len(got), len(data))
	}
	stdout, err := runCmd(t, append([]string{"get", "models/empty"}, common...)...)
	if err != nil || stdout != "" {
		t.Fatalf("get empty: %q %v", stdout, err)
	}
	if _, err := runCmd(t, append([]string{"get", "models/missing"}, common...)...); !errors.Is(err, errNotFound) {
		t.Fatalf("get of a missing key: %v, want errNotFound (exit 3)", err)
	}
	if _, err := runCmdIn(t, []byte("from stdin"), append([]string{"put", "models/stdin", "-"}, common...)...); err != nil {
		t.Fatalf("put from stdin: %v", err)
	}
	if stdout, err := runCmd(t, append([]string{"get", "models/stdin"}, common...)...); err != nil || stdout != "from stdin" {
		t.Fatalf("get to stdout: %q %v", stdout, err)
	}
	stdout, err = runCmd(t, append([]string{"ls", "models/"}, common...)...)
	if err != nil || stdout != "3145745\tmodels/a b\n0\tmodels/empty\n10\tmodels/stdin\n" {
		t.Fatalf("ls: %q %v", stdout, err)
	}

	stopWithSIGTERM(t, "owner", done)
	stdout, err = runCmd(t, append([]string{"ls"}, common...)...)
	if err != nil || stdout != "" {
		t.Fatalf("ls after the owner unmounted: %q %v", stdout, err)
	}
}

func TestOwnerCommandRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"owner", "--storage-path", "relative"}, "no master"},
		{[]string{"owner", "--master", "127.0.0.1:1", "--staging-bytes", "-1"}, "--staging-bytes -1"},
		{[]string{"owner", "--master", "127.0.0.1:1", "--protocol", "carrier-pigeon"}, "want tcp or rdma"},
		{[]string{"get"}, "accepts 1 arg"},
		{[]string{"put", "k"}, "accepts 2 arg"},
		{[]string{"put", "k", filepath.Join(dir, "missing"), "--master", "127.0.0.1:1"}, "no such file"},
	}
	for _, c := range cases {
		_, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want it to mention %q", c.args, err, c.want)
		}
	}
	// A bad storage path stops the owner before it mounts, and says why.
	_, err := runCmd(t, "owner", "--master", "127.0.0.1:1", "--storage-path", filepath.Join(dir, "nope"),
		"--backend", "file_per_key_storage_backend", "--unlocked-staging", "--staging-bytes", "1048576")
	if err == nil || !strings.Contains(err.Error(), "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH") {
		t.Fatalf("bad storage path: %v", err)
	}
}

// TestOwnerProcessKilled runs two `ferry owner` processes, stores a key on
// each, kills one with SIGKILL (no unmount) and checks that reading its key
// fails within the RPC timeout while the other owner's key still reads.
func TestOwnerProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the ferry binary")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	bin := filepath.Join(dir, "ferry")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	m, err := master.NewServer(master.Config{Options: master.Options{EnableOffload: true, ClientTTL: time.Minute}, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	common := []string{"--master", m.Addr().String(), "--hostname", "127.0.0.1", "--rpc-timeout-ms", "1000", "--rpc-connect-timeout-ms", "1000"}

	start := func(name string) *exec.Cmd {
		store := filepath.Join(dir, name)
		os.Mkdir(store, 0o755)
		cmd := exec.Command(bin, append([]string{"owner", "--backend", "file_per_key_storage_backend", "--storage-path", store,
			"--staging-bytes", "8388608", "--unlocked-staging", "--log-level", "error"}, common...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.Contains(line, "serving on") {
			t.Fatalf("owner %s did not start: %q %v", name, line, err)
		}
		return cmd
	}
	a := start("a")
	start("b")

	// Put keys until both owners hold some (placement spreads them).
	in := filepath.Join(dir, "in.bin")
	os.WriteFile(in, []byte("payload"), 0o644)
	for i := range 6 {
		if _, err := runCmd(t, append([]string{"put", fmt.Sprintf("k%d", i), in}, common...)...); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	var ok, failed int
	for i := range 6 {
		begin := time.Now()
		_, err := runCmd(t, append([]string{"get", fmt.Sprintf("k%d", i), "-o", filepath.Join(dir, "out")}, common...)...)
		if took := time.Since(begin); took > 5*time.Second {
			t.Fatalf("get took %v with a dead owner (RPC timeouts 1 s)", took)
		}
		if err == nil {
			ok++
			continue
		}
		if errors.Is(err, errNotFound) || !strings.Contains(err.Error(), "owner RPC failed") {
			t.Fatalf("get of a key on the killed owner: %v", err)
		}
		failed++
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("%d reads ok, %d failed: want both (keys on both owners)", ok, failed)
	}
}
