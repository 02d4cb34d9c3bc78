//go:build linux

package multihost

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Hosts of the offload test.
const (
	hostS3 = iota
	hostMaster
	hostOwnerA
	hostOwnerB
	hostRequester
	numHosts
)

// rpcTimeout is MC_RPC_TIMEOUT_MS and MC_RPC_CONNECT_TIMEOUT_MS for every
// process: how long a call to an unreachable owner may take.
const rpcTimeout = 2 * time.Second

// clientTTL is the master's --client_ttl: an owner cut off for longer is
// forgotten, and must mount again and rescan its bucket prefix when its
// link comes back.
const clientTTL = 5 * time.Second

var (
	reS3     = regexp.MustCompile(`^s3 server listening on (http://\S+) bucket`)
	reMaster = regexp.MustCompile(`^master listening on (\S+)`)
	reOwner  = regexp.MustCompile(`serving on (\S+) \(segment`)
	rePutTo  = regexp.MustCompile(`bytes to (\S+):`)
)

// TestOffloadAcrossHosts runs the embedded S3 store, `ferry master`, two
// `ferry owner`s (distinct key prefixes in one bucket) and `ferry put` /
// `ferry get` requesters in five network namespaces. It checks the write
// and read paths across hosts byte for byte; then cuts owner A's link and
// checks that A's keys fail within the RPC timeout while B's keys still
// work; then heals the link and checks that A's keys work again. Last, it
// cuts A off for longer than the master's client TTL, checks that A's keys
// become "not found" while B's still work, heals, and checks that A
// mounts again and re-advertises its objects from the bucket.
func TestOffloadAcrossHosts(t *testing.T) {
	nw := newNetwork(t, numHosts)
	bin := buildFerry(t)
	dir := t.TempDir()

	s3 := nw.startDaemon("s3", hostS3, nil, bin, "demo", "s3-server",
		"--listen", nw.addr(hostS3)+":0", "--bucket", "ferry-multihost")
	s3URL := s3.await(t, reS3, 20*time.Second)

	master := nw.startDaemon("master", hostMaster, nil, bin, "master", "--enable_offload",
		"--rpc_address", nw.addr(hostMaster), "--rpc_port", "0", "--client_ttl", fmt.Sprint(int(clientTTL/time.Second)))
	masterAddr := master.await(t, reMaster, 20*time.Second)

	timeouts := []string{
		fmt.Sprintf("MC_RPC_TIMEOUT_MS=%d", rpcTimeout.Milliseconds()),
		fmt.Sprintf("MC_RPC_CONNECT_TIMEOUT_MS=%d", rpcTimeout.Milliseconds()),
	}
	s3Env := append([]string{
		"MOONCAKE_S3_ENDPOINT=" + s3URL, "MOONCAKE_S3_BUCKET=ferry-multihost", "MOONCAKE_S3_REGION=us-east-1",
		"MOONCAKE_S3_ACCESS_KEY_ID=multihost", "MOONCAKE_S3_SECRET_ACCESS_KEY=multihost-secret",
		"MOONCAKE_S3_PATH_STYLE=true",
	}, timeouts...)
	owners := map[int]string{} // host -> advertised endpoint
	for _, h := range []int{hostOwnerA, hostOwnerB} {
		name := fmt.Sprintf("owner-%c", 'a'+h-hostOwnerA)
		store := filepath.Join(dir, name)
		if err := os.Mkdir(store, 0o755); err != nil {
			t.Fatal(err)
		}
		d := nw.startDaemon(name, h, s3Env, bin, "owner", "--master", masterAddr, "--hostname", nw.addr(h),
			"--fs-type", "s3", "--root-dir", name, "--storage-path", store, "--staging-bytes", fmt.Sprint(32<<20),
			"--lease-ms", "10000")
		owners[h] = d.await(t, reOwner, 30*time.Second)
		if !strings.HasPrefix(owners[h], nw.addr(h)+":") {
			t.Fatalf("%s advertises %s, want an address of its own host %s", name, owners[h], nw.addr(h))
		}
	}

	req := func(timeout time.Duration, args ...string) result {
		full := append(args, "--master", masterAddr, "--hostname", nw.addr(hostRequester))
		return nw.runIn(hostRequester, timeouts, timeout, bin, full...)
	}
	get := func(key string) (result, []byte) {
		out := filepath.Join(dir, fmt.Sprintf("get-%d", rand.Uint64()))
		r := req(30*time.Second, "get", key, "-o", out, "--timings")
		b, _ := os.ReadFile(out)
		os.Remove(out)
		return r, b
	}

	// Write path: put keys until each owner holds at least two; the
	// master places each new key on the owner with the most room.
	data := map[string][]byte{}
	byOwner := map[int][]string{}
	for i := 0; i < 16 && (len(byOwner[hostOwnerA]) < 2 || len(byOwner[hostOwnerB]) < 2); i++ {
		key := fmt.Sprintf("layer%d/block-%d", i%3, i)
		b := make([]byte, 200<<10+rand.IntN(900<<10))
		for j := range b {
			b[j] = byte(rand.Uint32())
		}
		file := filepath.Join(dir, fmt.Sprintf("put-%d", i))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := req(30*time.Second, "put", key, file, "--timings")
		if r.code != 0 {
			t.Fatalf("put %s: %v", key, r)
		}
		m := rePutTo.FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("put %s: no owner in the timings line: %q", key, r.stderr)
		}
		host := -1
		for h, ep := range owners {
			if ep == m[1] {
				host = h
			}
		}
		if host < 0 {
			t.Fatalf("put %s went to %s, which is neither owner (%v)", key, m[1], owners)
		}
		data[key] = b
		byOwner[host] = append(byOwner[host], key)
	}
	if len(byOwner[hostOwnerA]) == 0 || len(byOwner[hostOwnerB]) == 0 {
		t.Fatalf("the master placed every key on one owner: %v", byOwner)
	}
	t.Logf("owner A (%s) holds %q; owner B (%s) holds %q", owners[hostOwnerA], byOwner[hostOwnerA],
		owners[hostOwnerB], byOwner[hostOwnerB])

	// Read path, every key, from the requester's host.
	checkGet := func(key string) {
		t.Helper()
		r, b := get(key)
		if r.code != 0 {
			t.Fatalf("get %s: %v", key, r)
		}
		if !bytes.Equal(b, data[key]) {
			t.Fatalf("get %s: %d bytes differ from the %d put", key, len(b), len(data[key]))
		}
	}
	for key := range data {
		checkGet(key)
	}

	// Cut owner A off. Its keys must fail cleanly, within the RPC
	// timeout (plus process start-up), while B's keys still work.
	nw.cut(hostOwnerA)
	for _, key := range byOwner[hostOwnerA][:1] {
		r, _ := get(key)
		if r.code == 0 {
			t.Fatalf("get %s succeeded while its owner was cut off", key)
		}
		if r.code != 1 {
			t.Fatalf("get %s with its owner cut off: %v; want exit 1 (failed), not a usage or not-found error", key, r)
		}
		if limit := rpcTimeout + 3*time.Second; r.elapsed > limit {
			t.Fatalf("get %s with its owner cut off took %v, want under %v (MC_RPC_TIMEOUT_MS=%d)", key, r.elapsed, limit, rpcTimeout.Milliseconds())
		}
		t.Logf("owner A cut off: get %s failed cleanly: %v", key, r)
	}
	for _, key := range byOwner[hostOwnerB] {
		checkGet(key)
	}

	// Heal; owner A's keys come back (at once if the master still
	// counts A as alive, else after A's next ping remounts it).
	nw.heal(hostOwnerA)
	waitReadable(t, get, byOwner[hostOwnerA][0], data)
	for _, key := range byOwner[hostOwnerA] {
		checkGet(key)
	}

	// Cut A off for longer than the master's client TTL: the master
	// forgets A and its replicas, so A's keys become "not found" (exit 3)
	// instead of timing out, and B is unaffected.
	nw.cut(hostOwnerA)
	cutAt := time.Now()
	keyA := byOwner[hostOwnerA][0]
	for {
		r, _ := get(keyA)
		if r.code == 3 {
			t.Logf("master forgot owner A %v after its link was cut: %v", time.Since(cutAt).Round(time.Millisecond), r)
			break
		}
		if r.code != 1 {
			t.Fatalf("get %s with its owner cut off: %v; want exit 1 (owner unreachable) or 3 (not found)", keyA, r)
		}
		if time.Since(cutAt) > clientTTL+10*time.Second {
			t.Fatalf("master still sends requesters to owner A %v after its link was cut (client TTL %v): %v", time.Since(cutAt), clientTTL, r)
		}
	}
	for _, key := range byOwner[hostOwnerB] {
		checkGet(key)
	}
	// Back: A's ping finds it unknown, A mounts again and re-advertises
	// what its prefix holds in the bucket (ScanMeta).
	nw.heal(hostOwnerA)
	waitReadable(t, get, keyA, data)
	for _, key := range byOwner[hostOwnerA] {
		checkGet(key)
	}
}

// waitReadable polls get(key) until it returns the right bytes, for at
// most 25 s.
func waitReadable(t *testing.T, get func(string) (result, []byte), key string, data map[string][]byte) {
	t.Helper()
	start := time.Now()
	for {
		r, b := get(key)
		if r.code == 0 {
			if !bytes.Equal(b, data[key]) {
				t.Fatalf("get %s after heal: bytes differ", key)
			}
			t.Logf("%s readable again %v after the link came back", key, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 25*time.Second {
			t.Fatalf("get %s still failing 25 s after the link came back: %v", key, r)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
