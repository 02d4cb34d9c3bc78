package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	pb "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// ErrNotMounted is returned by the gRPC master client when the master
// answers NOT_MOUNTED.
var ErrNotMounted = errors.New("owner not mounted at the master")

// grpcMaster implements Master over the master's gRPC API.
type grpcMaster struct {
	c pb.MasterServiceClient
}

// NewMasterClient returns a Master that talks to the master over conn.
// The caller owns conn and closes it after the owner.
func NewMasterClient(conn grpc.ClientConnInterface) Master {
	return grpcMaster{c: pb.NewMasterServiceClient(conn)}
}

func codeErr(op string, code pb.ErrorCode, msg string) error {
	if code == pb.ErrorCode_ERROR_CODE_OK {
		return nil
	}
	if code == pb.ErrorCode_ERROR_CODE_NOT_MOUNTED {
		return fmt.Errorf("%s: %w: %s", op, ErrNotMounted, msg)
	}
	return fmt.Errorf("%s: master answered %s: %s", op, code, msg)
}

func (g grpcMaster) Mount(ctx context.Context, m MountInfo) (time.Duration, error) {
	r, err := g.c.MountLocalDiskSegment(ctx, &pb.MountLocalDiskSegmentRequest{OwnerId: m.OwnerID,
		EnableOffloading: m.EnableOffloading, RpcEndpoint: m.RPCEndpoint, SegmentName: m.SegmentName,
		CapacityBytes: uint64(max(m.Capacity, 0))})
	if err != nil {
		return 0, err
	}
	return time.Duration(r.GetClientTtlMs()) * time.Millisecond, codeErr("mount", r.GetCode(), r.GetMessage())
}

func (g grpcMaster) Unmount(ctx context.Context, id string) error {
	r, err := g.c.UnmountLocalDiskSegment(ctx, &pb.UnmountLocalDiskSegmentRequest{OwnerId: id})
	if err != nil {
		return err
	}
	return codeErr("unmount", r.GetCode(), r.GetMessage())
}

func (g grpcMaster) Ping(ctx context.Context, id string) (bool, error) {
	r, err := g.c.Ping(ctx, &pb.PingRequest{OwnerId: id})
	if err != nil {
		return false, err
	}
	if r.GetStatus() == pb.ClientStatus_CLIENT_STATUS_NEED_REMOUNT || r.GetCode() == pb.ErrorCode_ERROR_CODE_NOT_MOUNTED {
		return false, nil
	}
	return true, codeErr("ping", r.GetCode(), r.GetMessage())
}

func items(objs []Object) []*pb.OffloadItem {
	out := make([]*pb.OffloadItem, len(objs))
	for i, o := range objs {
		out[i] = &pb.OffloadItem{Tenant: o.Tenant, Key: o.Key, Size: uint64(max(o.Size, 0))}
	}
	return out
}

func (g grpcMaster) NotifySuccess(ctx context.Context, id string, objs []Object) error {
	r, err := g.c.NotifyOffloadSuccess(ctx, &pb.NotifyOffloadSuccessRequest{OwnerId: id, Items: items(objs)})
	if err != nil {
		return err
	}
	if err := codeErr("notify success", r.GetCode(), r.GetMessage()); err != nil {
		return err
	}
	for i, c := range r.GetResults() {
		if c != pb.ErrorCode_ERROR_CODE_OK && i < len(objs) {
			return codeErr(fmt.Sprintf("notify success of key %q", objs[i].Key), c, "")
		}
	}
	return nil
}

func (g grpcMaster) NotifyFailure(ctx context.Context, id string, objs []Object) error {
	r, err := g.c.NotifyOffloadFailure(ctx, &pb.NotifyOffloadFailureRequest{OwnerId: id, Items: items(objs), Reason: "object store write failed"})
	if err != nil {
		return err
	}
	return codeErr("notify failure", r.GetCode(), r.GetMessage())
}

func (g grpcMaster) ReportCapacity(ctx context.Context, id string, capacity int64) error {
	r, err := g.c.ReportCapacity(ctx, &pb.ReportCapacityRequest{OwnerId: id, CapacityBytes: uint64(max(capacity, 0))})
	if err != nil {
		return err
	}
	return codeErr("report capacity", r.GetCode(), r.GetMessage())
}
