package rdma

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/rdma/fakeverbs"
	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/transport"
)

func writeAll(t *testing.T, a, b *testHost, n uint64) *transport.Task {
	t.Helper()
	fill(a.mem[:n], 42)
	clear(b.mem[:n])
	task := &transport.Task{Op: transport.Write, Local: a.mem[:n], LocalAddr: a.region.Addr,
		Target: segmentOf(b), TargetAddr: b.region.Addr}
	run(t, a.tr, task)
	return task
}

func mustComplete(t *testing.T, task *transport.Task, a, b *testHost, n uint64) {
	t.Helper()
	if task.State() != transport.StateCompleted {
		t.Fatalf("state %d, err %v", task.State(), task.Err())
	}
	if !bytes.Equal(a.mem[:n], b.mem[:n]) {
		t.Fatal("data differs")
	}
}

func TestFaultRemoteAccessRetriesOnOtherRail(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<20, "cpu:0", testConfig())
	b := c.addHost(t, 1<<20, "cpu:0", testConfig())
	for _, n := range a.prov.NICs() {
		n.FailNext(fakeverbs.FaultRemoteAccess, 2)
	}
	task := writeAll(t, a, b, 1<<20)
	mustComplete(t, task, a, b, 1<<20)
	var errs uint64
	for _, n := range a.prov.NICs() {
		errs += n.Stats().Errors
	}
	if errs == 0 {
		t.Fatal("fault was not injected")
	}
}

func TestFaultRetryExceededEverywhereFails(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<20, "cpu:0", testConfig())
	b := c.addHost(t, 1<<20, "cpu:0", testConfig())
	for _, n := range a.prov.NICs() {
		n.FailNext(fakeverbs.FaultRetryExceeded, 1<<20)
	}
	task := writeAll(t, a, b, 256<<10)
	if task.State() != transport.StateFailed || !errors.Is(task.Err(), ErrTransferFailed) {
		t.Fatalf("state %d err %v", task.State(), task.Err())
	}
	var ce *verbs.CompletionError
	if !errors.As(task.Err(), &ce) || ce.Status != verbs.StatusRetryExcErr {
		t.Fatalf("error does not carry the completion status: %v", task.Err())
	}
	// The transport still works once the fault is gone.
	for _, n := range a.prov.NICs() {
		n.FailNext(fakeverbs.FaultNone, 0)
	}
	mustComplete(t, writeAll(t, a, b, 256<<10), a, b, 256<<10)
}

func TestFaultLostCompletionTimesOut(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig()
	cfg.SliceTimeout = 300 * time.Millisecond
	a := c.addHost(t, 1<<20, "cpu:0", cfg)
	b := c.addHost(t, 1<<20, "cpu:0", cfg)
	for _, n := range a.prov.NICs() {
		n.FailNext(fakeverbs.FaultLoseCompletion, 1)
	}
	task := writeAll(t, a, b, 64<<10)
	if task.State() != transport.StateFailed || !errors.Is(task.Err(), ErrTimeout) {
		t.Fatalf("state %d err %v", task.State(), task.Err())
	}
	for _, n := range a.prov.NICs() {
		n.FailNext(fakeverbs.FaultNone, 0)
	}
	mustComplete(t, writeAll(t, a, b, 512<<10), a, b, 512<<10)
}

func TestFaultPortDownUsesOtherRail(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 2<<20, "cpu:0", testConfig())
	b := c.addHost(t, 2<<20, "cpu:0", testConfig())
	mustComplete(t, writeAll(t, a, b, 2<<20), a, b, 2<<20) // connect both rails
	b.prov.NICs()[0].SetPortState(verbs.PortDown)
	mustComplete(t, writeAll(t, a, b, 2<<20), a, b, 2<<20)
	b.prov.NICs()[0].SetPortState(verbs.PortActive)
}

// A local port that stays down is not put back into rotation when the
// rail pause ends; it comes back with its PORT_ACTIVE event.
func TestFaultLocalPortDownStaysOutUntilActive(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 2<<20, "cpu:0", testConfig())
	b := c.addHost(t, 2<<20, "cpu:0", testConfig())
	mustComplete(t, writeAll(t, a, b, 2<<20), a, b, 2<<20)
	nic := a.prov.NICs()[0]
	nic.SetPortState(verbs.PortDown)
	waitUntil(t, "the NIC is taken out of rotation", func() bool { return a.tr.nics[0].down.Load() })
	time.Sleep(3 * testConfig().RailPause) // several pauses
	if !a.tr.nics[0].down.Load() {
		t.Fatal("a NIC whose port is down was re-enabled after the rail pause")
	}
	mustComplete(t, writeAll(t, a, b, 2<<20), a, b, 2<<20) // over the other rail
	nic.SetPortState(verbs.PortActive)
	waitUntil(t, "the NIC is back", func() bool { return !a.tr.nics[0].down.Load() })
	mustComplete(t, writeAll(t, a, b, 2<<20), a, b, 2<<20)
}

func TestFaultQPErrorFlushesAndRetries(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 2<<20, "cpu:0", testConfig())
	b := c.addHost(t, 2<<20, "cpu:0", testConfig())
	mustComplete(t, writeAll(t, a, b, 128<<10), a, b, 128<<10)
	for _, n := range a.prov.NICs() {
		n.SetCompletionDelay(200 * time.Microsecond)
	}
	fill(a.mem, 77)
	task := &transport.Task{Op: transport.Read, Local: a.mem, LocalAddr: a.region.Addr, Target: segmentOf(b), TargetAddr: b.region.Addr}
	fill(b.mem, 13)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(5 * time.Millisecond)
		for _, ep := range a.tr.allEndpoints() {
			for _, qp := range ep.qps {
				_ = qp.ToError()
			}
		}
	}()
	run(t, a.tr, task)
	<-done
	if task.State() != transport.StateCompleted || !bytes.Equal(a.mem, b.mem) {
		t.Fatalf("state %d err %v", task.State(), task.Err())
	}
}

func TestHandshakeQPCountMismatch(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<16, "cpu:0", testConfig())
	cfg := testConfig()
	cfg.QPsPerEndpoint = 3
	b := c.addHost(t, 1<<16, "cpu:0", cfg)
	task := writeAll(t, a, b, 1<<16)
	if task.State() != transport.StateFailed || !errors.Is(task.Err(), ErrTransferFailed) {
		t.Fatalf("state %d err %v", task.State(), task.Err())
	}
	d := b.tr.nics[0].path
	reply, err := b.tr.HandleConnection(t.Context(), []byte(`{"local_nic_path":"x@mlx5_0","peer_nic_path":"`+d+`","local_gid":"","local_lid":1,"qp_num":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := DecodeHandshake(reply); r.ReplyMsg == "" {
		t.Fatalf("mismatch not rejected: %s", reply)
	}
}

func TestMissingReadyAckClosesEndpointThenRecovers(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<18, "cpu:0", testConfig())
	b := c.addHost(t, 1<<18, "cpu:0", testConfig())
	a.dropAck = true
	task := writeAll(t, a, b, 1<<18) // a's side is connected; b waits for acks
	mustComplete(t, task, a, b, 1<<18)
	time.Sleep(3 * testConfig().ReadyAckTimeout)
	for _, n := range b.tr.nics {
		n.mu.Lock()
		for _, ep := range n.eps {
			if ep.state.Load() == epWaitAck {
				t.Errorf("endpoint %s still waiting for its ready ack", ep.peerPath)
			}
		}
		n.mu.Unlock()
	}
	a.dropAck = false
	// b's endpoints are gone; a's QPs are in ERR now; slices retry and
	// reconnect.
	mustComplete(t, writeAll(t, a, b, 1<<18), a, b, 1<<18)
}

func TestPeerRestartRebuildsEndpoint(t *testing.T) {
	c := newCluster(t)
	a := c.addHost(t, 1<<18, "cpu:0", testConfig())
	b := c.addHost(t, 1<<18, "cpu:0", testConfig())
	mustComplete(t, writeAll(t, a, b, 1<<18), a, b, 1<<18)
	// b acts as a restarted peer towards a: its QP numbers change.
	before := len(a.tr.allEndpoints())
	for _, ep := range b.tr.allEndpoints() {
		ep.kill(errors.New("test restart"))
	}
	mustComplete(t, writeAll(t, b, a, 1<<18), b, a, 1<<18)
	if before == 0 || len(a.tr.allEndpoints()) == 0 {
		t.Fatalf("endpoints before %d after %d", before, len(a.tr.allEndpoints()))
	}
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// peerNIC is the NIC name of an endpoint's peer path ("server@nic").
func peerNIC(ep *endpoint) string {
	_, nic, _ := SplitNICPath(ep.peerPath)
	return nic
}

// With MC_ENABLE_DEST_DEVICE_AFFINITY every slice goes from a local NIC
// to the peer NIC of the same name; with MC_NIC_PEER_AFFINITY to the peer
// NICs the map names.
func TestPeerNICAffinity(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want map[string]string
	}{
		{"same-name", func(c *Config) { c.DestDeviceAffinity = true }, map[string]string{"mlx5_0": "mlx5_0", "mlx5_1": "mlx5_1"}},
		{"map", func(c *Config) {
			c.PeerAffinity = ParsePeerAffinity("mlx5_0=mlx5_1; mlx5_1 = mlx5_0", nil)
		}, map[string]string{"mlx5_0": "mlx5_1", "mlx5_1": "mlx5_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			cfg := testConfig()
			tc.set(&cfg)
			a := c.addHost(t, 8<<20, "cpu:0", cfg)
			b := c.addHost(t, 8<<20, "cpu:0", testConfig())
			for range 3 {
				mustComplete(t, writeAll(t, a, b, 8<<20), a, b, 8<<20)
			}
			eps := a.tr.allEndpoints()
			if len(eps) == 0 {
				t.Fatal("no endpoints")
			}
			for _, ep := range eps {
				if got, want := peerNIC(ep), tc.want[ep.n.name]; got != want {
					t.Errorf("endpoint %s -> %s, want peer NIC %s", ep.n.name, ep.peerPath, want)
				}
			}
		})
	}
}

func TestParsePeerAffinity(t *testing.T) {
	got := ParsePeerAffinity(" mlx5_0=mlx5_0,mlx5_1 ;bad; =x; mlx5_2= ;mlx5_3=mlx5_9,,", nil)
	want := map[string][]string{"mlx5_0": {"mlx5_0", "mlx5_1"}, "mlx5_3": {"mlx5_9"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	env := map[string]string{"MC_ENABLE_DEST_DEVICE_AFFINITY": "true", "MC_ENABLE_HCA_PEER_AFFINITY": "1", "MC_NIC_PEER_AFFINITY": "a=b"}
	c := ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if c.DestDeviceAffinity || len(c.PeerAffinity) != 0 {
		t.Fatalf("both switches on must turn both off: %+v %v", c.DestDeviceAffinity, c.PeerAffinity)
	}
	delete(env, "MC_ENABLE_DEST_DEVICE_AFFINITY")
	if c := ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil); len(c.PeerAffinity["a"]) != 1 {
		t.Fatalf("MC_NIC_PEER_AFFINITY not read: %v", c.PeerAffinity)
	}
}
