//go:build linux

package multihost

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildFerry builds the ferry binary once into a temporary directory.
func buildFerry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferry")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		// go test runs with its own toolchain on PATH; fall back to the
		// one this binary was built with.
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.CommandContext(ctx, goBin, "build", "-o", bin, "github.com/ferrylabs/ferry/cmd/ferry").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/ferry: %v\n%s", err, out)
	}
	return bin
}

// daemon is a long-running process inside a host namespace.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string
	done   chan struct{}
}

// lockedWriter serialises writes into a daemon's buffers.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startDaemon starts bin with args in host i with extra environment, and
// stops it (SIGTERM, then SIGKILL after 10 s) when the test ends. Its
// output is logged if the test fails.
func (nw *network) startDaemon(name string, i int, env []string, bin string, args ...string) *daemon {
	t := nw.t
	t.Helper()
	d := &daemon{name: name, lines: make(chan string, 64), done: make(chan struct{})}
	d.cmd = nw.command(context.Background(), i, bin, args...)
	d.cmd.Env = append(os.Environ(), env...)
	// ip netns exec execs the daemon in place, so this reaches it: a
	// killed test run leaves no daemon behind.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.cmd.Stderr = lockedWriter{&d.mu, &d.stderr}
	pipe, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			lockedWriter{&d.mu, &d.stdout}.Write([]byte(line + "\n"))
			select {
			case d.lines <- line:
			default:
			}
		}
		io.Copy(io.Discard, pipe)
		d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			d.mu.Lock()
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", name, d.stdout.String(), name, d.stderr.String())
			d.mu.Unlock()
		}
	})
	return d
}

// stop ends the daemon and waits for it.
func (d *daemon) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// await returns the first submatch of re in a stdout line, failing the
// test after timeout or when the daemon exits first.
func (d *daemon) await(t *testing.T, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line := <-d.lines:
			if m := re.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-d.done:
			t.Fatalf("%s exited before printing %v", d.name, re)
		case <-deadline:
			t.Fatalf("%s did not print %v within %v", d.name, re, timeout)
		}
	}
}

// result is a finished one-shot command.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runIn runs bin with args in host i to completion (bounded by timeout).
func (nw *network) runIn(i int, env []string, timeout time.Duration, bin string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := nw.command(ctx, i, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		if r.stderr == "" {
			r.stderr = err.Error()
		}
	}
	return r
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v; stderr: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
}
