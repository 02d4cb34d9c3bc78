package master

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

func TestMountRefusedWithoutEnableOffload(t *testing.T) {
	h := start(t, Config{})
	r, err := h.c.MountLocalDiskSegment(h.ctx, &offloadv1.MountLocalDiskSegmentRequest{
		OwnerId: "a", EnableOffloading: true, RpcEndpoint: "127.0.0.1:1", SegmentName: "s", CapacityBytes: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != codeUnableOffload {
		t.Fatalf("mount: %v, want UNABLE_OFFLOAD", r.Code)
	}
	u, err := h.c.UnmountLocalDiskSegment(h.ctx, &offloadv1.UnmountLocalDiskSegmentRequest{OwnerId: "a"})
	if err != nil || u.Code != codeUnableOffload {
		t.Fatalf("unmount: %v %v", u.GetCode(), err)
	}
	p, err := h.c.BatchPutStart(h.ctx, &offloadv1.BatchPutStartRequest{Keys: [][]byte{[]byte("k")}, Sizes: []uint64{1}})
	if err != nil || p.Code != codeUnableOffload {
		t.Fatalf("put start: %v %v", p.GetCode(), err)
	}
	// Pings from an owner that could not mount answer NOT_MOUNTED.
	ping, err := h.c.Ping(h.ctx, &offloadv1.PingRequest{OwnerId: "a"})
	if err != nil || ping.Code != codeNotMounted {
		t.Fatalf("ping: %v %v", ping.GetCode(), err)
	}
}

func TestMountValidation(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	for name, req := range map[string]*offloadv1.MountLocalDiskSegmentRequest{
		"empty id":       {RpcEndpoint: "h:1", SegmentName: "s"},
		"long id":        {OwnerId: string(make([]byte, MaxOwnerIDLen+1)), RpcEndpoint: "h:1", SegmentName: "s"},
		"no endpoint":    {OwnerId: "a", SegmentName: "s"},
		"no port":        {OwnerId: "a", RpcEndpoint: "host", SegmentName: "s"},
		"port 0":         {OwnerId: "a", RpcEndpoint: "host:0", SegmentName: "s"},
		"port too large": {OwnerId: "a", RpcEndpoint: "host:70000", SegmentName: "s"},
		"no host":        {OwnerId: "a", RpcEndpoint: ":80", SegmentName: "s"},
		"no segment":     {OwnerId: "a", RpcEndpoint: "h:1"},
	} {
		r, err := h.c.MountLocalDiskSegment(h.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != codeInvalid || r.Message == "" {
			t.Errorf("%s: code %v message %q, want INVALID_PARAMS with a message", name, r.Code, r.Message)
		}
	}
	if n := h.metric(t, "ferry_master_owners"); n != 0 {
		t.Fatalf("invalid mounts registered %v owners", n)
	}
}

func TestNotifyThenBatchGetReplicaList(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true, LeaseTTL: 7 * time.Second}})
	h.mount(t, "a", 1<<30, true)
	h.mount(t, "b", 1<<30, true)
	bin := "k\x00with\xffbytes"
	h.notify(t, "a", "t1", 100, "k1", bin)
	h.notify(t, "b", "t1", 100, "k1")
	r, err := h.c.BatchGetReplicaList(h.ctx, &offloadv1.BatchGetReplicaListRequest{Tenant: "t1", Keys: [][]byte{[]byte("k1"), []byte("nope"), []byte(bin)}})
	if err != nil {
		t.Fatal(err)
	}
	if r.LeaseTtlMs != 7000 {
		t.Fatalf("lease ttl %d ms", r.LeaseTtlMs)
	}
	res := r.Results
	if res[0].Code != codeOK || len(res[0].Replicas) != 2 {
		t.Fatalf("k1: %v with %d replicas", res[0].Code, len(res[0].Replicas))
	}
	owners := map[string]*offloadv1.Replica{}
	for _, rep := range res[0].Replicas {
		owners[rep.OwnerId] = rep
	}
	a := owners["a"]
	if a == nil || a.Size != 100 || a.RpcEndpoint != "127.0.0.1:"+portFor("a") || a.SegmentName != "seg-a" || a.Type != offloadv1.ReplicaType_REPLICA_TYPE_LOCAL_DISK {
		t.Fatalf("replica on a: %v", a)
	}
	if res[1].Code != codeNotFound || len(res[1].Replicas) != 0 {
		t.Fatalf("missing key: %v", res[1])
	}
	if res[2].Code != codeOK || res[2].Replicas[0].OwnerId != "a" {
		t.Fatalf("binary key: %v", res[2])
	}
	// Tenants are separate namespaces; "" is "default".
	if got := h.get(t, "t2", "k1"); got[0].Code != codeNotFound {
		t.Fatalf("k1 in t2: %v", got[0].Code)
	}
	h.notify(t, "a", "", 5, "dk")
	if got := h.get(t, DefaultTenant, "dk"); got[0].Code != codeOK {
		t.Fatalf("default tenant: %v", got[0].Code)
	}
	if hits, misses := h.metric(t, "ferry_master_replica_hits_total"), h.metric(t, "ferry_master_replica_misses_total"); hits != 3 || misses != 2 {
		t.Fatalf("hits %v misses %v, want 3 and 2", hits, misses)
	}
	// Re-notifying updates the owner's replica instead of adding one.
	h.notify(t, "a", "t1", 300, "k1")
	for _, rep := range h.get(t, "t1", "k1")[0].Replicas {
		if rep.OwnerId == "a" && rep.Size != 300 {
			t.Fatalf("updated size %d", rep.Size)
		}
	}
	if used := h.metric(t, "ferry_master_offload_used_bytes"); used != 300+100+100+5 {
		t.Fatalf("used bytes %v", used)
	}
	if keys := h.metric(t, "ferry_master_keys"); keys != 3 {
		t.Fatalf("keys %v", keys)
	}
}

func TestInvalidBatches(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	h.mount(t, "a", 1<<20, true)
	g, err := h.c.BatchGetReplicaList(h.ctx, &offloadv1.BatchGetReplicaListRequest{Tenant: "bad\x00tenant", Keys: [][]byte{[]byte("k")}})
	if err != nil || g.Code != codeInvalid {
		t.Fatalf("NUL tenant: %v %v", g.GetCode(), err)
	}
	g, err = h.c.BatchGetReplicaList(h.ctx, &offloadv1.BatchGetReplicaListRequest{Keys: [][]byte{[]byte("k"), nil}})
	if err != nil || g.Code != codeInvalid || g.Results[0].Code != codeNotFound || g.Results[1].Code != codeInvalid {
		t.Fatalf("empty key: %v", g)
	}
	p, err := h.c.BatchPutStart(h.ctx, &offloadv1.BatchPutStartRequest{Keys: [][]byte{[]byte("k")}, Sizes: []uint64{1, 2}})
	if err != nil || p.Code != codeInvalid || p.Message == "" {
		t.Fatalf("mismatched sizes: %v", p)
	}
	n, err := h.c.NotifyOffloadSuccess(h.ctx, &offloadv1.NotifyOffloadSuccessRequest{OwnerId: "a", Items: []*offloadv1.OffloadItem{
		{Key: []byte("ok"), Size: 1}, {Key: nil, Size: 1}, {Tenant: "x\x00", Key: []byte("k")},
	}})
	if err != nil || n.Code != codeInvalid || n.Results[0] != codeOK || n.Results[1] != codeInvalid || n.Results[2] != codeInvalid {
		t.Fatalf("notify with bad items: %v", n)
	}
	if got := h.get(t, "", "ok"); got[0].Code != codeOK {
		t.Fatal("the valid item of a partly invalid notify was not recorded")
	}
	if _, err := h.c.NotifyOffloadSuccess(h.ctx, &offloadv1.NotifyOffloadSuccessRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestOwnerTTLExpiry(t *testing.T) {
	clk := newFakeClock()
	h := start(t, Config{Options: Options{EnableOffload: true, ClientTTL: 10 * time.Second, now: clk.Now}, SweepInterval: time.Hour})
	h.mount(t, "a", 1<<20, true)
	h.mount(t, "b", 1<<20, true)
	h.notify(t, "a", "t", 10, "only-a", "both")
	h.notify(t, "b", "t", 10, "both")

	// Pings keep an owner alive past the TTL.
	for i := 0; i < 3; i++ {
		clk.Advance(6 * time.Second)
		p, err := h.c.Ping(h.ctx, &offloadv1.PingRequest{OwnerId: "b"})
		if err != nil || p.Code != codeOK || p.Status != offloadv1.ClientStatus_CLIENT_STATUS_OK {
			t.Fatalf("ping b: %v %v", p, err)
		}
	}
	// a has not pinged for 18 s: it and its replicas are gone.
	got := h.get(t, "t", "only-a", "both")
	if got[0].Code != codeNotFound {
		t.Fatalf("only-a after a expired: %v", got[0].Code)
	}
	if got[1].Code != codeOK || len(got[1].Replicas) != 1 || got[1].Replicas[0].OwnerId != "b" {
		t.Fatalf("both after a expired: %v", got[1])
	}
	p, err := h.c.Ping(h.ctx, &offloadv1.PingRequest{OwnerId: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Code != codeNotMounted || p.Status != offloadv1.ClientStatus_CLIENT_STATUS_NEED_REMOUNT || p.ViewVersion == 0 {
		t.Fatalf("ping from expired owner: %v", p)
	}
	n, err := h.c.NotifyOffloadSuccess(h.ctx, &offloadv1.NotifyOffloadSuccessRequest{OwnerId: "a", Items: []*offloadv1.OffloadItem{{Key: []byte("x"), Size: 1}}})
	if err != nil || n.Code != codeNotMounted || n.Results[0] != codeNotMounted {
		t.Fatalf("notify from expired owner: %v", n)
	}
	if h.metric(t, "ferry_master_owner_expirations_total") != 1 {
		t.Fatal("expiration not counted")
	}
	// The owner re-mounts and rescans: its objects come back.
	h.mount(t, "a", 1<<20, true)
	h.notify(t, "a", "t", 10, "only-a")
	if got := h.get(t, "t", "only-a"); got[0].Code != codeOK {
		t.Fatalf("after remount and rescan: %v", got[0].Code)
	}
}

func TestSweeperExpiresIdleOwners(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true, ClientTTL: 100 * time.Millisecond}, SweepInterval: 10 * time.Millisecond})
	h.mount(t, "a", 1<<20, true)
	h.notify(t, "a", "", 10, "k")
	if h.metric(t, "ferry_master_owners") != 1 {
		t.Fatal("owner not counted")
	}
	// No RPC from here on: only the sweeper can drop the owner.
	waitFor(t, "the sweeper to expire the owner", func() bool {
		return h.metric(t, "ferry_master_owners") == 0 && h.metric(t, "ferry_master_keys") == 0
	})
}

func TestPlacementSpreadsAndRespectsCapacity(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	const mib = 1 << 20
	h.mount(t, "a", 10*mib, true)
	h.mount(t, "b", 10*mib, true)
	h.mount(t, "ro", 100*mib, false) // not accepting new objects

	put := func(prefix string, n int, size uint64) []*offloadv1.Placement {
		t.Helper()
		req := &offloadv1.BatchPutStartRequest{Tenant: "t"}
		for i := 0; i < n; i++ {
			req.Keys = append(req.Keys, []byte(fmt.Sprintf("%s%d", prefix, i)))
			req.Sizes = append(req.Sizes, size)
		}
		r, err := h.c.BatchPutStart(h.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Placements) != n {
			t.Fatalf("%d placements for %d keys", len(r.Placements), n)
		}
		return r.Placements
	}
	count := func(ps []*offloadv1.Placement) map[string]int {
		m := map[string]int{}
		for _, p := range ps {
			if p.Code == codeOK {
				m[p.OwnerId]++
			} else {
				m[p.Code.String()]++
			}
		}
		return m
	}
	first := put("x", 10, mib)
	if c := count(first); c["a"] != 5 || c["b"] != 5 {
		t.Fatalf("10 keys over two empty owners: %v, want 5 and 5", c)
	}
	for _, p := range first {
		if p.OwnerId == "a" && (p.RpcEndpoint != "127.0.0.1:"+portFor("a") || p.SegmentName != "seg-a") {
			t.Fatalf("placement lacks owner details: %v", p)
		}
	}
	if r := h.metric(t, "ferry_master_offload_reserved_bytes"); r != 10*mib {
		t.Fatalf("reserved %v", r)
	}
	// 10 MiB left in total: 12 more keys, 10 fit, evenly.
	second := put("y", 12, mib)
	if c := count(second); c["a"] != 5 || c["b"] != 5 || c["ERROR_CODE_NO_CAPACITY"] != 2 {
		t.Fatalf("12 keys into 10 MiB of room: %v", c)
	}
	// A key larger than any owner's room.
	if ps := put("big", 1, 11*mib); ps[0].Code != codeNoCapacity {
		t.Fatalf("oversized key: %v", ps[0].Code)
	}
	// A placed key is in progress until its owner reports.
	if ps := put("x", 1, mib); ps[0].Code != codePutInProgress {
		t.Fatalf("second put of x0: %v", ps[0].Code)
	}
	// The owner stores x0 and says so: reservation becomes a replica.
	owner := first[0].OwnerId
	h.notify(t, owner, "t", mib, "x0")
	if got := h.get(t, "t", "x0"); got[0].Code != codeOK || got[0].Replicas[0].OwnerId != owner {
		t.Fatalf("x0 after notify: %v", got[0])
	}
	if ps := put("x", 1, mib); ps[0].Code != codeExists {
		t.Fatalf("put of stored x0: %v", ps[0].Code)
	}
	if r, u := h.metric(t, "ferry_master_offload_reserved_bytes"), h.metric(t, "ferry_master_offload_used_bytes"); r != 19*mib || u != mib {
		t.Fatalf("after notify: reserved %v used %v", r, u)
	}
	// A failure report frees the reservation: the room can be used again.
	var fails []*offloadv1.OffloadItem
	for i, p := range second {
		if p.Code == codeOK && p.OwnerId == "b" {
			fails = append(fails, &offloadv1.OffloadItem{Tenant: "t", Key: []byte(fmt.Sprintf("y%d", i)), Size: mib})
		}
	}
	f, err := h.c.NotifyOffloadFailure(h.ctx, &offloadv1.NotifyOffloadFailureRequest{OwnerId: "b", Items: fails, Reason: "test"})
	if err != nil || f.Code != codeOK {
		t.Fatalf("failure notify: %v %v", f, err)
	}
	if c := count(put("z", 6, mib)); c["b"] != 5 || c["ERROR_CODE_NO_CAPACITY"] != 1 {
		t.Fatalf("after b's failures: %v, want 5 on b and 1 without room", c)
	}
	// Capacity reports change placement.
	rc, err := h.c.ReportCapacity(h.ctx, &offloadv1.ReportCapacityRequest{OwnerId: "a", CapacityBytes: 20 * mib})
	if err != nil || rc.Code != codeOK {
		t.Fatalf("report capacity: %v %v", rc, err)
	}
	if c := count(put("w", 3, mib)); c["a"] != 3 {
		t.Fatalf("after a grew: %v", c)
	}
	rc, err = h.c.ReportCapacity(h.ctx, &offloadv1.ReportCapacityRequest{OwnerId: "ghost", CapacityBytes: 1})
	if err != nil || rc.Code != codeNotMounted {
		t.Fatalf("report capacity of unknown owner: %v %v", rc, err)
	}
}

func TestPutReservationTimesOut(t *testing.T) {
	clk := newFakeClock()
	h := start(t, Config{Options: Options{EnableOffload: true, ClientTTL: time.Hour, PutTimeout: time.Minute, now: clk.Now}, SweepInterval: time.Hour})
	h.mount(t, "a", 1000, true)
	req := &offloadv1.BatchPutStartRequest{Keys: [][]byte{[]byte("k")}, Sizes: []uint64{1000}}
	r, err := h.c.BatchPutStart(h.ctx, req)
	if err != nil || r.Placements[0].Code != codeOK || r.PutTimeoutMs != 60000 {
		t.Fatalf("first put: %v %v", r, err)
	}
	req2 := &offloadv1.BatchPutStartRequest{Keys: [][]byte{[]byte("k2")}, Sizes: []uint64{1}}
	if r, _ := h.c.BatchPutStart(h.ctx, req2); r.Code != codeNoCapacity {
		t.Fatalf("full owner: %v", r.Code)
	}
	clk.Advance(2 * time.Minute)
	h.srv.Service().Sweep(clk.Now())
	if r, _ := h.c.BatchPutStart(h.ctx, req2); r.Placements[0].Code != codeOK {
		t.Fatalf("after the reservation timed out: %v", r.Placements[0].Code)
	}
	// A timed-out put of the same key can be placed again.
	if r, _ := h.c.BatchPutStart(h.ctx, &offloadv1.BatchPutStartRequest{Keys: [][]byte{[]byte("k")}, Sizes: []uint64{999}}); r.Placements[0].Code != codeOK {
		t.Fatalf("re-put after timeout: %v", r.Placements[0].Code)
	}
}

func TestRemove(t *testing.T) {
	clk := newFakeClock()
	h := start(t, Config{Options: Options{EnableOffload: true, ClientTTL: time.Hour, LeaseTTL: 10 * time.Second, now: clk.Now}})
	h.mount(t, "a", 1<<20, true)
	h.notify(t, "a", "t", 64, "k1", "k2", "k3")
	remove := func(force bool, keys ...string) []offloadv1.ErrorCode {
		t.Helper()
		req := &offloadv1.RemoveRequest{Tenant: "t", Force: force}
		for _, k := range keys {
			req.Keys = append(req.Keys, []byte(k))
		}
		r, err := h.c.Remove(h.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Results
	}
	if got := remove(false, "k1", "missing"); got[0] != codeOK || got[1] != codeNotFound {
		t.Fatalf("remove k1, missing: %v", got)
	}
	h.get(t, "t", "k2", "k3") // leases k2 and k3
	if got := remove(false, "k2"); got[0] != codeHasLease {
		t.Fatalf("remove leased k2: %v", got)
	}
	if got := remove(true, "k2"); got[0] != codeOK {
		t.Fatalf("forced remove of k2: %v", got)
	}
	clk.Advance(11 * time.Second)
	if got := remove(false, "k3"); got[0] != codeOK {
		t.Fatalf("remove k3 after its lease: %v", got)
	}
	if got := h.get(t, "t", "k1", "k2", "k3"); got[0].Code != codeNotFound || got[1].Code != codeNotFound || got[2].Code != codeNotFound {
		t.Fatalf("removed keys still found: %v", got)
	}
	if u := h.metric(t, "ferry_master_offload_used_bytes"); u != 0 {
		t.Fatalf("used bytes after removing everything: %v", u)
	}
}

func TestUnmountDropsOnlyThatOwner(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	h.mount(t, "a", 1<<20, true)
	h.mount(t, "b", 1<<20, true)
	h.notify(t, "a", "t", 1, "shared", "a-only")
	h.notify(t, "b", "t", 1, "shared")
	u, err := h.c.UnmountLocalDiskSegment(h.ctx, &offloadv1.UnmountLocalDiskSegmentRequest{OwnerId: "a"})
	if err != nil || u.Code != codeOK || u.RemovedReplicas != 2 {
		t.Fatalf("unmount: %v %v", u, err)
	}
	got := h.get(t, "t", "shared", "a-only")
	if got[0].Code != codeOK || len(got[0].Replicas) != 1 || got[0].Replicas[0].OwnerId != "b" {
		t.Fatalf("shared after unmount of a: %v", got[0])
	}
	if got[1].Code != codeNotFound {
		t.Fatalf("a-only after unmount: %v", got[1].Code)
	}
	u, err = h.c.UnmountLocalDiskSegment(h.ctx, &offloadv1.UnmountLocalDiskSegmentRequest{OwnerId: "a"})
	if err != nil || u.Code != codeOK || u.RemovedReplicas != 0 {
		t.Fatalf("second unmount: %v %v", u, err)
	}
	p, _ := h.c.Ping(h.ctx, &offloadv1.PingRequest{OwnerId: "a"})
	if p.Code != codeNotMounted {
		t.Fatalf("ping after unmount: %v", p.Code)
	}
}

func TestList(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	h.mount(t, "a", 1<<20, true)
	var want [][]byte
	for i := 0; i < 25; i++ {
		k := fmt.Sprintf("p/%02d", i)
		h.notify(t, "a", "t", uint64(i), k)
		want = append(want, []byte(k))
	}
	h.notify(t, "a", "t", 1, "q/other")
	h.notify(t, "a", "u", 1, "p/other-tenant")
	var got [][]byte
	var after []byte
	for pages := 0; ; pages++ {
		r, err := h.c.List(h.ctx, &offloadv1.ListRequest{Tenant: "t", Prefix: []byte("p/"), StartAfter: after, Limit: 10})
		if err != nil || r.Code != codeOK {
			t.Fatalf("list: %v %v", r, err)
		}
		for _, k := range r.Keys {
			if want := uint64(len(got)); k.Size != want {
				t.Fatalf("size of %q = %d, want %d", k.Key, k.Size, want)
			}
			got = append(got, k.Key)
		}
		if !r.Truncated {
			break
		}
		if pages > 5 {
			t.Fatal("list does not end")
		}
		after = r.Keys[len(r.Keys)-1].Key
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("key %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestConcurrentClients(t *testing.T) {
	h := start(t, Config{Options: Options{EnableOffload: true}})
	h.mount(t, "a", 1<<40, true)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				k := []byte(fmt.Sprintf("g%d-%d", g, i))
				if _, err := h.c.BatchPutStart(h.ctx, &offloadv1.BatchPutStartRequest{Keys: [][]byte{k}, Sizes: []uint64{10}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := h.c.NotifyOffloadSuccess(h.ctx, &offloadv1.NotifyOffloadSuccessRequest{OwnerId: "a", Items: []*offloadv1.OffloadItem{{Key: k, Size: 10}}}); err != nil {
					t.Error(err)
					return
				}
				r, err := h.c.BatchGetReplicaList(h.ctx, &offloadv1.BatchGetReplicaListRequest{Keys: [][]byte{k}})
				if err != nil || r.Results[0].Code != codeOK {
					t.Errorf("get %s: %v %v", k, r, err)
					return
				}
				if _, err := h.c.Ping(h.ctx, &offloadv1.PingRequest{OwnerId: "a"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if k := h.metric(t, "ferry_master_keys"); k != 200 {
		t.Fatalf("keys %v, want 200", k)
	}
	if r := h.metric(t, "ferry_master_offload_reserved_bytes"); r != 0 {
		t.Fatalf("reserved %v after all notifies", r)
	}
}
