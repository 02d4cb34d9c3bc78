package redisstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// redisServer is a redis-server child process on 127.0.0.1.
type redisServer struct {
	addr   string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	waited chan struct{}
	once   sync.Once
}

// startRedis starts redis-server on a free loopback port (or on addr when
// not empty) with persistence off, waits until it answers PING, and stops
// it in t.Cleanup. It skips the test when redis-server is not installed.
func startRedis(t testing.TB, addr string, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not in PATH: install it (apt-get install -y redis-server) to run the redis store tests")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		a := addr
		if a == "" {
			a = freeAddr(t)
		}
		s, err := launch(t, bin, a, extra)
		if err == nil {
			return s
		}
		lastErr = err
		if addr != "" {
			break
		}
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func launch(t testing.TB, bin, addr string, extra []string) (*redisServer, error) {
	_, port, _ := net.SplitHostPort(addr)
	args := append([]string{"--save", "", "--appendonly", "no", "--port", port,
		"--bind", "127.0.0.1", "--dir", t.TempDir(), "--daemonize", "no"}, extra...)
	s := &redisServer{addr: addr, cmd: exec.Command(bin, args...), out: &bytes.Buffer{}, waited: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.waited) }()
	t.Cleanup(s.stop)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.waited:
			return nil, fmt.Errorf("redis-server on %s exited: %s", addr, s.out.String())
		default:
		}
		if r, err := rawCmd(addr, "PING"); err == nil && (r == "+PONG" || strings.HasPrefix(r, "-NOAUTH")) {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("redis-server on %s did not answer PING: %s", addr, s.out.String())
}

// stop kills the server (resuming it first if it was paused) and reaps it.
func (s *redisServer) stop() {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		<-s.waited
	})
}

// pause stops the process with SIGSTOP: it keeps its socket but answers
// nothing, as a hung server. stop resumes and kills it.
func (s *redisServer) pause(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// rawCmd sends one command in RESP on a fresh connection, independent of
// go-redis, and returns the reply: a status or error line as sent
// ("+OK", "-ERR ..."), an integer as ":n", a bulk string's bytes, or
// "(nil)".
func rawCmd(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return line, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return "", fmt.Errorf("bad bulk header %q", line)
	}
	if n < 0 {
		return "(nil)", nil
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
