package engine

import (
	"context"
	"fmt"
	"os"

	"github.com/ferrylabs/ferry/engine/metadata"
	"github.com/ferrylabs/ferry/engine/metadata/etcdstore"
	"github.com/ferrylabs/ferry/engine/metadata/httpstore"
	"github.com/ferrylabs/ferry/engine/metadata/redisstore"
)

// OpenMetadataStore opens the central metadata store a Mooncake metadata
// server string names ("etcd://h:p[,h:p]" or a bare "h:p", "redis://h:p",
// "http://h:p/path"), with each store's default timeouts; redis reads
// MC_REDIS_PASSWORD and MC_REDIS_DB_INDEX, http MC_METADATA_HTTP_TOKEN. It fails for P2PHANDSHAKE,
// which has no store, and with an error wrapping metadata.ErrBadServer or
// metadata.ErrStore otherwise. The caller closes the store.
func OpenMetadataStore(ctx context.Context, server string) (metadata.Store, error) {
	sv, err := metadata.ParseServer(server)
	if err != nil {
		return nil, err
	}
	// Each case returns a nil interface on failure, never a typed nil.
	switch sv.Kind {
	case metadata.KindEtcd:
		s, err := etcdstore.Open(ctx, sv.Endpoints, etcdstore.Options{})
		if err != nil {
			return nil, err
		}
		return s, nil
	case metadata.KindRedis:
		opts, err := redisstore.OptionsFromEnv(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		s, err := redisstore.Open(ctx, sv.Endpoints[0], opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	case metadata.KindHTTP:
		s, err := httpstore.Open(sv.URL, httpstore.Options{Token: os.Getenv("MC_METADATA_HTTP_TOKEN")})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: %q has no metadata store", metadata.ErrBadServer, server)
}
