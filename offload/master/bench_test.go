package master

import (
	"fmt"
	"testing"

	offloadv1 "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// BenchmarkBatchGetReplicaList measures the service's lookup of 64 keys
// among 100 000 (no gRPC), the master's per-request cost on the read path.
func BenchmarkBatchGetReplicaList(b *testing.B) {
	svc, err := NewService(Options{EnableOffload: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	svc.MountLocalDiskSegment(ctx, &offloadv1.MountLocalDiskSegmentRequest{OwnerId: "a", RpcEndpoint: "h:1", SegmentName: "s", CapacityBytes: 1 << 40})
	var items []*offloadv1.OffloadItem
	for i := 0; i < 100000; i++ {
		items = append(items, &offloadv1.OffloadItem{Key: []byte(fmt.Sprintf("layer/%06d", i)), Size: 1 << 20})
	}
	svc.NotifyOffloadSuccess(ctx, &offloadv1.NotifyOffloadSuccessRequest{OwnerId: "a", Items: items})
	req := &offloadv1.BatchGetReplicaListRequest{}
	for i := 0; i < 64; i++ {
		req.Keys = append(req.Keys, items[i*1000].Key)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := svc.BatchGetReplicaList(ctx, req)
		if r.Results[63].Code != codeOK {
			b.Fatal(r.Results[63].Code)
		}
	}
}
