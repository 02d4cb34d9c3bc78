package oss

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// TestLiveSyncBatchGetSmokeAndTiming is the reference live OSS batch run
// (spec §7): 64 objects of 4 MiB uploaded with one PutBatch, a checked
// warm-up GetBatch, then 3 timed GetBatch rounds of 1024 requests into a
// pre-touched 4 GiB destination, then cleanup. It needs real credentials
// in the MOONCAKE_OSS_* / OSS_* variables and MOONCAKE_RUN_LIVE_OSS=1.
// The figures are a finite continuous queue, not a throughput guarantee.
func TestLiveSyncBatchGetSmokeAndTiming(t *testing.T) {
	if os.Getenv("MOONCAKE_RUN_LIVE_OSS") != "1" {
		t.Skip("set MOONCAKE_RUN_LIVE_OSS=1 and the OSS variables to run against real OSS")
	}
	const (
		mode    = "sync"
		objSize = 4 << 20
		depth   = 64
		slots   = 1024
		rounds  = 3
	)
	lookup := func(name string) (string, bool) {
		if name == "MOONCAKE_OSS_MAX_CONNECTIONS" {
			return "64", true
		}
		return os.LookupEnv(name)
	}
	prefix := fmt.Sprintf("/mooncake-review-live/%d-%d-%s", os.Getpid(), time.Now().UnixNano(), mode)
	a := New(Options{Lookup: lookup, Prefix: prefix})
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	src := make([]byte, objSize)
	for i := range src {
		src[i] = byte((i*17 + 29) & 255)
	}
	keys := make([]string, depth)
	puts := make([]objstore.PutRequest, depth)
	for i := range keys {
		keys[i] = "object-" + strconv.Itoa(i)
		puts[i] = objstore.PutRequest{Key: keys[i], Bufs: [][]byte{src}}
	}
	defer func() {
		for _, k := range keys {
			if err := a.Delete(ctx, k); err != nil {
				t.Errorf("cleanup %s: %v", k, err)
			}
		}
		if left, err := a.ListKeys(ctx); err != nil || len(left) != 0 {
			t.Errorf("after cleanup: %d keys, %v", len(left), err)
		}
	}()
	for i, err := range a.PutBatch(ctx, puts) {
		if err != nil {
			t.Fatalf("put %s: %v", keys[i], err)
		}
	}
	dst := make([]byte, slots*objSize)
	for i := 0; i < len(dst); i += 4096 {
		dst[i] = 1
	}
	reqs := make([]objstore.GetRequest, slots)
	for i := range reqs {
		reqs[i] = objstore.GetRequest{Key: keys[i%depth], Buf: dst[i*objSize : (i+1)*objSize]}
	}
	for i, r := range a.GetBatch(ctx, reqs[:depth]) {
		if r.Err != nil || !bytes.Equal(reqs[i].Buf, src) {
			t.Fatalf("warm-up %d: %v", i, r.Err)
		}
	}
	fmt.Printf("LIVE_OSS_FUNCTIONAL mode=%s objects=%d object_mib=4 batch_put=ok batch_get=ok memcmp=ok\n", mode, depth)
	var total time.Duration
	for round := 1; round <= rounds; round++ {
		start := time.Now()
		errs := 0
		for _, r := range a.GetBatch(ctx, reqs) {
			if r.Err != nil {
				errs++
			}
		}
		el := time.Since(start)
		total += el
		fmt.Printf("LIVE_OSS_GET mode=%s round=%d requests=%d GiB=4 seconds=%.3f GiBps=%.3f errors=%d\n",
			mode, round, slots, el.Seconds(), 4/el.Seconds(), errs)
		if errs != 0 {
			t.Errorf("round %d: %d errors", round, errs)
		}
	}
	fmt.Printf("LIVE_OSS_GET_TOTAL mode=%s rounds=%d GiB=12 seconds=%.3f GiBps=%.3f\n", mode, rounds, total.Seconds(), 12/total.Seconds())
}
