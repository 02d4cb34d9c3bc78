package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3Server is the embedded object store: gofakes3's S3 API over its
// in-memory backend, served with net/http. It does not check request
// signatures (any access key and secret are accepted), so it is for demos
// and tests on a trusted host, never for data that matters. Objects live
// in memory until Close.
type S3Server struct {
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}
	bucket string
	once   sync.Once
	err    error
}

// StartS3Server serves the embedded store on ln (which it takes over and
// closes on Close) with bucket already created.
func StartS3Server(ln net.Listener, bucket string) (*S3Server, error) {
	if bucket == "" {
		ln.Close()
		return nil, fmt.Errorf("%w: empty bucket name", ErrInvalidOptions)
	}
	if err := gofakes3.ValidateBucketName(bucket); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: bucket %q: %v", ErrInvalidOptions, bucket, err)
	}
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%w: create bucket %q: %w", ErrSetup, bucket, err)
	}
	fake := gofakes3.New(be, gofakes3.WithoutVersioning(),
		gofakes3.WithLogger(gofakes3.StdLog(log.New(io.Discard, "", 0))))
	s := &S3Server{
		ln:     ln,
		bucket: bucket,
		done:   make(chan struct{}),
		srv: &http.Server{
			Handler:           fake.Server(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0),
		},
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// ListenS3Server listens on addr ("127.0.0.1:0" picks a port) and serves
// the embedded store there.
func ListenS3Server(addr, bucket string) (*S3Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: embedded S3 listen on %s: %w", ErrSetup, addr, err)
	}
	return StartS3Server(ln, bucket)
}

// Endpoint is the server's URL, http://host:port.
func (s *S3Server) Endpoint() string { return "http://" + s.ln.Addr().String() }

// Addr is the listener's address.
func (s *S3Server) Addr() net.Addr { return s.ln.Addr() }

// Bucket is the bucket created at start.
func (s *S3Server) Bucket() string { return s.bucket }

// Env returns the MOONCAKE_S3_* variables that point an S3 adapter at
// this server (with throwaway credentials, which it does not check).
func (s *S3Server) Env() map[string]string {
	return map[string]string{
		"MOONCAKE_S3_ENDPOINT":          s.Endpoint(),
		"MOONCAKE_S3_BUCKET":            s.bucket,
		"MOONCAKE_S3_REGION":            "us-east-1",
		"MOONCAKE_S3_ACCESS_KEY_ID":     "ferry-demo",
		"MOONCAKE_S3_SECRET_ACCESS_KEY": "ferry-demo-not-checked",
		"MOONCAKE_S3_PATH_STYLE":        "true",
	}
}

// Close stops the server, dropping connections in flight after up to
// 2 s, and waits for it. It is idempotent.
func (s *S3Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.err = errors.Join(err, s.srv.Close())
		}
		<-s.done
	})
	return s.err
}
