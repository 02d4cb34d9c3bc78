package filestorage

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrylabs/ferry/offload/objstore"
	"github.com/ferrylabs/ferry/offload/oss"
	"github.com/ferrylabs/ferry/offload/s3"
)

// ObjectStoreParams are what an object-store opener gets.
type ObjectStoreParams struct {
	// Kind is "oss" or "s3".
	Kind string
	// Prefix is the owner prefix (the root dir without slashes).
	Prefix string
	// Lookup reads MOONCAKE_OSS_* / MOONCAKE_S3_* / AWS_*; nil means the
	// process environment.
	Lookup func(string) (string, bool)
	// Logger and Registerer are handed to the adapter.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// DefaultObjectStore builds and initialises the oss or s3 adapter from
// the environment with the owner prefix. Init validates the
// configuration only; credentials are first exercised by the health
// check or the owner's start-up scan.
func DefaultObjectStore(ctx context.Context, p ObjectStoreParams) (Store, error) {
	var st objstore.Store
	switch p.Kind {
	case "s3":
		st = s3.New(s3.Options{Prefix: p.Prefix, Lookup: objstore.LookupFunc(p.Lookup), Logger: p.Logger, Registerer: p.Registerer})
	case "oss":
		st = oss.New(oss.Options{Prefix: p.Prefix, Lookup: objstore.LookupFunc(p.Lookup), Logger: p.Logger, Registerer: p.Registerer})
	default:
		return nil, fmt.Errorf("%w: object store %q", ErrNotSupported, p.Kind)
	}
	if err := st.Init(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("%w: %w", ErrBackend, err)
	}
	return FromObjectStore(st), nil
}
