package filestorage

import (
	"context"
	"fmt"
)

// DefaultObjectStore opens the oss or s3 adapter from the MOONCAKE_OSS_* /
// MOONCAKE_S3_* environment with the given key prefix.
func DefaultObjectStore(ctx context.Context, kind, prefix string) (Store, error) {
	return nil, fmt.Errorf("%w: %s adapter not built in", ErrNotSupported, kind)
}
