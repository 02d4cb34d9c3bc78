package owner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/ferrylabs/ferry/offload/filestorage"
	pb "github.com/ferrylabs/ferry/offload/proto/ferry/offload/v1"
)

// service implements pb.OwnerServiceServer over an Owner. Following the
// proto's convention, the owner's answer (including refusals) is in the
// response code; a gRPC status error only means the call did not run.
type service struct {
	pb.UnimplementedOwnerServiceServer
	w *Owner
}

func (w *Owner) startServer() {
	w.srv = grpc.NewServer(grpc.WaitForHandlers(true))
	pb.RegisterOwnerServiceServer(w.srv, &service{w: w})
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_ = w.srv.Serve(w.lis)
	}()
}

// stopServer lets in-flight RPCs finish, or cancels them when ctx ends.
func (w *Owner) stopServer(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		w.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.srv.Stop()
		<-done
	}
}

// Code maps an owner error to the proto's error code.
func Code(err error) pb.ErrorCode {
	switch {
	case err == nil:
		return pb.ErrorCode_ERROR_CODE_OK
	case errors.Is(err, ErrInvalidArgument):
		return pb.ErrorCode_ERROR_CODE_INVALID_PARAMS
	case errors.Is(err, ErrStagingExhausted):
		return pb.ErrorCode_ERROR_CODE_BUFFER_OVERFLOW
	case errors.Is(err, ErrNotFound), errors.Is(err, filestorage.ErrNotFound):
		return pb.ErrorCode_ERROR_CODE_FILE_NOT_FOUND
	case errors.Is(err, filestorage.ErrSizeMismatch):
		return pb.ErrorCode_ERROR_CODE_SIZE_MISMATCH
	case errors.Is(err, ErrUnknownBatch):
		return pb.ErrorCode_ERROR_CODE_BATCH_NOT_FOUND
	case errors.Is(err, ErrMaster):
		return pb.ErrorCode_ERROR_CODE_INTERNAL
	case errors.Is(err, ErrStorage):
		return pb.ErrorCode_ERROR_CODE_FILE_READ_FAIL
	}
	return pb.ErrorCode_ERROR_CODE_INTERNAL
}

func tenantOf(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

func toSizes(u []uint64) ([]int64, error) {
	out := make([]int64, len(u))
	for i, v := range u {
		if v > 1<<62 {
			return nil, fmt.Errorf("%w: size %d of key %d is out of range", ErrInvalidArgument, v, i)
		}
		out[i] = int64(v)
	}
	return out, nil
}

func slots(addrs []uint64, sizes []int64) []*pb.SlotInfo {
	out := make([]*pb.SlotInfo, len(addrs))
	for i := range addrs {
		out[i] = &pb.SlotInfo{Address: addrs[i], Size: uint64(sizes[i])}
	}
	return out
}

func (s *service) BatchGetOffloadObject(ctx context.Context, r *pb.BatchGetOffloadObjectRequest) (*pb.BatchGetOffloadObjectResponse, error) {
	sizes, err := toSizes(r.GetSizes())
	if err == nil {
		var b Batch
		b, err = s.w.GetObjects(ctx, tenantOf(r.GetTenant()), r.GetKeys(), sizes)
		if err == nil {
			return &pb.BatchGetOffloadObjectResponse{BatchId: b.ID, Slots: slots(b.Addrs, sizes),
				SegmentName: b.Segment, LeaseTtlMs: uint64(b.Lease / time.Millisecond)}, nil
		}
	}
	return &pb.BatchGetOffloadObjectResponse{Code: Code(err), Message: err.Error()}, nil
}

func (s *service) ReleaseOffloadBuffer(_ context.Context, r *pb.ReleaseOffloadBufferRequest) (*pb.ReleaseOffloadBufferResponse, error) {
	if !s.w.Release(r.GetBatchId()) {
		return &pb.ReleaseOffloadBufferResponse{Code: pb.ErrorCode_ERROR_CODE_BATCH_NOT_FOUND,
			Message: fmt.Sprintf("batch %d is unknown, released or expired", r.GetBatchId())}, nil
	}
	return &pb.ReleaseOffloadBufferResponse{}, nil
}

func (s *service) BatchPutStart(ctx context.Context, r *pb.OwnerBatchPutStartRequest) (*pb.OwnerBatchPutStartResponse, error) {
	sizes, err := toSizes(r.GetSizes())
	if err == nil {
		var b Batch
		b, err = s.w.PutStart(ctx, tenantOf(r.GetTenant()), r.GetKeys(), sizes)
		if err == nil {
			return &pb.OwnerBatchPutStartResponse{BatchId: b.ID, Slots: slots(b.Addrs, sizes),
				SegmentName: b.Segment, LeaseTtlMs: uint64(b.Lease / time.Millisecond)}, nil
		}
	}
	return &pb.OwnerBatchPutStartResponse{Code: Code(err), Message: err.Error()}, nil
}

func (s *service) BatchPutCommit(ctx context.Context, r *pb.BatchPutCommitRequest) (*pb.BatchPutCommitResponse, error) {
	errs, err := s.w.PutCommit(ctx, r.GetBatchId())
	if err != nil {
		return &pb.BatchPutCommitResponse{Code: Code(err), Message: err.Error()}, nil
	}
	resp := &pb.BatchPutCommitResponse{Results: make([]pb.ErrorCode, len(errs))}
	for i, e := range errs {
		if e != nil {
			c := Code(e)
			if c == pb.ErrorCode_ERROR_CODE_FILE_READ_FAIL {
				c = pb.ErrorCode_ERROR_CODE_FILE_WRITE_FAIL
			}
			resp.Results[i] = c
			if resp.Message == "" {
				resp.Message = e.Error()
			}
		}
	}
	return resp, nil
}
