package multihost

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// network is a set of hosts on one bridge. Each host is a network
// namespace with one interface, eth0, whose peer end sits on the bridge
// in the switch namespace.
type network struct {
	t      *testing.T
	prefix string // unique name prefix for namespaces
	subnet string // "198.18.N"
	sw     string // switch namespace
	hosts  []string
}

// requireNetns skips the test unless it can create network namespaces.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("multi-host tests need root to create network namespaces and veth links; run them as root (CI does)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("multi-host tests need the ip command from iproute2 (apt-get install iproute2)")
	}
}

// run executes a command and fails the test on error.
func run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetwork creates a switch namespace with a bridge and n hosts attached
// to it; host i gets address 198.18.<net>.<i+1>/24. Everything is removed
// when the test ends.
func newNetwork(t *testing.T, n int) *network {
	t.Helper()
	requireNetns(t)
	id := os.Getpid() % 250
	nw := &network{
		t:      t,
		prefix: fmt.Sprintf("fy%d", os.Getpid()),
		subnet: fmt.Sprintf("198.18.%d", id),
	}
	nw.sw = nw.prefix + "-sw"
	t.Cleanup(nw.destroy)
	run(t, "ip", "netns", "add", nw.sw)
	run(t, "ip", "-n", nw.sw, "link", "add", "br0", "type", "bridge")
	run(t, "ip", "-n", nw.sw, "link", "set", "br0", "up")
	run(t, "ip", "-n", nw.sw, "link", "set", "lo", "up")
	for i := 0; i < n; i++ {
		h := fmt.Sprintf("%s-h%d", nw.prefix, i)
		nw.hosts = append(nw.hosts, h)
		run(t, "ip", "netns", "add", h)
		port := fmt.Sprintf("p%d", i)
		run(t, "ip", "link", "add", port, "netns", nw.sw, "type", "veth", "peer", "name", "eth0", "netns", h)
		run(t, "ip", "-n", nw.sw, "link", "set", port, "master", "br0")
		run(t, "ip", "-n", nw.sw, "link", "set", port, "up")
		run(t, "ip", "-n", h, "addr", "add", nw.addr(i)+"/24", "dev", "eth0")
		run(t, "ip", "-n", h, "link", "set", "eth0", "up")
		run(t, "ip", "-n", h, "link", "set", "lo", "up")
	}
	return nw
}

// addr is host i's address.
func (nw *network) addr(i int) string { return fmt.Sprintf("%s.%d", nw.subnet, i+1) }

// cut takes host i's link down at the bridge; heal brings it back.
func (nw *network) cut(i int) {
	run(nw.t, "ip", "-n", nw.sw, "link", "set", fmt.Sprintf("p%d", i), "down")
}
func (nw *network) heal(i int) {
	run(nw.t, "ip", "-n", nw.sw, "link", "set", fmt.Sprintf("p%d", i), "up")
}

// command returns a command that runs inside host i's namespace.
func (nw *network) command(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	full := append([]string{"netns", "exec", nw.hosts[i], name}, args...)
	return exec.CommandContext(ctx, "ip", full...)
}

func (nw *network) destroy() {
	for _, h := range append(nw.hosts, nw.sw) {
		// Deleting a namespace removes its veth ends too.
		_ = exec.Command("ip", "netns", "del", h).Run()
	}
}

// inHost runs fn on an OS thread that has joined host i's network
// namespace. Sockets fn creates stay in that namespace after it returns.
func (nw *network) inHost(i int, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := netns.GetFromName(nw.hosts[i])
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: it dies with the goroutine instead of
		// running other goroutines in the wrong namespace.
		return fmt.Errorf("restoring the namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// dial connects from host i to addr with a short timeout.
func (nw *network) dial(i int, addr string) (net.Conn, error) {
	var c net.Conn
	err := nw.inHost(i, func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, time.Second)
		return err
	})
	return c, err
}

func TestNetworkConnectsHosts(t *testing.T) {
	nw := newNetwork(t, 2)
	var ln net.Listener
	if err := nw.inHost(1, func() error {
		var err error
		ln, err = net.Listen("tcp", nw.addr(1)+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c, err := nw.dial(0, ln.Addr().String())
	if err != nil {
		t.Fatalf("host 0 cannot reach host 1: %v", err)
	}
	c.Close()
	nw.cut(1)
	if c, err := nw.dial(0, ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("host 1 still reachable after its link was cut")
	}
	nw.heal(1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := nw.dial(0, ln.Addr().String())
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host 1 unreachable after its link came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
