package master

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults, as in Mooncake's master.
const (
	DefaultRPCPort    = 50051
	DefaultClientTTL  = 10 * time.Second
	DefaultLeaseTTL   = 10 * time.Second
	DefaultPutTimeout = 600 * time.Second
	// DefaultTenant replaces an empty tenant.
	DefaultTenant = "default"
	// MaxKeyLen is the longest key accepted.
	MaxKeyLen = 64 << 10
	// MaxTenantLen is the longest tenant accepted.
	MaxTenantLen = 256
	// MaxOwnerIDLen is the longest owner id accepted.
	MaxOwnerIDLen = 256
)

// Options configure a Service. Zero durations take the defaults above.
type Options struct {
	// EnableOffload accepts owner mounts and puts (--enable_offload).
	// Without it MountLocalDiskSegment and BatchPutStart answer
	// UNABLE_OFFLOAD.
	EnableOffload bool
	// ClientTTL is how long an owner stays mounted without a Ping or
	// Mount (--client_ttl).
	ClientTTL time.Duration
	// LeaseTTL is the read lease BatchGetReplicaList grants
	// (--default_kv_lease_ttl): a leased key is not removed unless forced.
	LeaseTTL time.Duration
	// PutTimeout is how long a BatchPutStart reservation waits for the
	// owner's notify (--put_start_release_timeout_sec).
	PutTimeout time.Duration
	// Logger receives owner lifecycle events. nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the service's metrics. nil means none.
	Registerer prometheus.Registerer

	now func() time.Time // for tests; nil means time.Now
}

func (o *Options) fill() error {
	if o.ClientTTL == 0 {
		o.ClientTTL = DefaultClientTTL
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.PutTimeout == 0 {
		o.PutTimeout = DefaultPutTimeout
	}
	if o.ClientTTL < 0 || o.LeaseTTL < 0 || o.PutTimeout < 0 {
		return fmt.Errorf("%w: negative duration (client ttl %v, lease ttl %v, put timeout %v)", ErrInvalidOptions, o.ClientTTL, o.LeaseTTL, o.PutTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.now == nil {
		o.now = time.Now
	}
	return nil
}

// MaxMessageSize is the largest request or response the server handles.
// Clients sending or receiving large batches should raise their own limit
// to match (grpc.MaxCallRecvMsgSize / grpc.MaxCallSendMsgSize).
const MaxMessageSize = 64 << 20
