package topology

import (
	"log/slog"
	"strconv"
	"strings"
)

// Config holds the knobs Build reads. ConfigFromEnv fills it from
// Mooncake's environment variables.
type Config struct {
	// Filters is the NIC allow-list (MC_TE_FILTERS); empty allows all.
	Filters []string
	// CustomTopoPath is a priority-matrix JSON file (MC_CUSTOM_TOPO_JSON)
	// that replaces the discovered matrix; "" means discover.
	CustomTopoPath string
	// GIDIndex forces a GID index (MC_GID_INDEX, else
	// NCCL_IB_GID_INDEX); -1 ranks GIDs automatically.
	GIDIndex int
	// Port is the device port to use (MC_IB_PORT, default 1).
	Port int
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig is discovery with no overrides.
func DefaultConfig() Config { return Config{GIDIndex: -1, Port: 1} }

// ConfigFromEnv reads MC_TE_FILTERS (NIC names separated by commas or
// spaces), MC_CUSTOM_TOPO_JSON, MC_GID_INDEX / NCCL_IB_GID_INDEX and
// MC_IB_PORT through getenv. Invalid numbers are logged and ignored.
func ConfigFromEnv(getenv func(string) string, log *slog.Logger) Config {
	c := DefaultConfig()
	c.Logger = log
	if v := getenv("MC_TE_FILTERS"); v != "" {
		c.Filters = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == ';' })
	}
	c.CustomTopoPath = strings.TrimSpace(getenv("MC_CUSTOM_TOPO_JSON"))
	for _, name := range []string{"MC_GID_INDEX", "NCCL_IB_GID_INDEX"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			c.logger().Warn("ignoring invalid GID index", "var", name, "value", v)
			continue
		}
		c.GIDIndex = n
		break
	}
	if v := strings.TrimSpace(getenv("MC_IB_PORT")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 255 {
			c.logger().Warn("ignoring invalid MC_IB_PORT", "value", v)
		} else {
			c.Port = n
		}
	}
	return c
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
