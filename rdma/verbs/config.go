package verbs

import (
	"log/slog"
	"strconv"
	"strings"
)

// Config holds the MC_* verbs tunables, with Mooncake's names and defaults.
type Config struct {
	// IBPort is MC_IB_PORT (default 1, 1..255).
	IBPort uint8
	// GIDIndex is MC_GID_INDEX, else NCCL_IB_GID_INDEX (default -1: rank
	// the GID table automatically; 0..255 otherwise).
	GIDIndex int
	// MTU is MC_MTU in bytes (512|1024|2048|4096, default 4096); the path
	// MTU is min(port active MTU, this).
	MTU MTU
	// TrafficClass is MC_IB_TC (default -1: off; 0..255).
	TrafficClass int
	// ServiceLevel is MC_IB_SL (default -1: off, meaning 0; 0..15).
	ServiceLevel int
	// MaxWR is MC_MAX_WR (default 256): max_send_wr and max_recv_wr.
	MaxWR int
	// MaxSGE is MC_MAX_SGE (default 4).
	MaxSGE int
	// MaxInline is MC_MAX_INLINE (default 64).
	MaxInline int
	// MaxCQE is MC_MAX_CQE_PER_CTX (default 4096): CQ depth.
	MaxCQE int
	// PKeyIndex is MC_PKEY_INDEX (default 0).
	PKeyIndex uint16
}

// DefaultConfig returns Mooncake's defaults.
func DefaultConfig() Config {
	return Config{
		IBPort: 1, GIDIndex: -1, MTU: MTU4096, TrafficClass: -1, ServiceLevel: -1,
		MaxWR: 256, MaxSGE: 4, MaxInline: 64, MaxCQE: 4096, PKeyIndex: 0,
	}
}

// ConfigFromEnv reads the MC_* variables through lookup (os.LookupEnv in
// production). An empty or invalid value is ignored with a warning on log
// (nil: slog.Default()) and the default kept, as Mooncake does; the
// warning names the variable and the accepted range.
func ConfigFromEnv(lookup func(string) (string, bool), log *slog.Logger) Config {
	if log == nil {
		log = slog.Default()
	}
	c := DefaultConfig()
	r := envReader{lookup: lookup, log: log}
	if v, ok := r.int("MC_IB_PORT", 1, 255); ok {
		c.IBPort = uint8(v)
	}
	if v, ok := r.int("MC_GID_INDEX", 0, 255); ok {
		c.GIDIndex = v
	} else if v, ok := r.int("NCCL_IB_GID_INDEX", 0, 255); ok {
		c.GIDIndex = v
	}
	if s, ok := r.get("MC_MTU"); ok {
		n, err := strconv.Atoi(s)
		m, valid := MTUFromBytes(n)
		if err != nil || !valid || m < MTU512 {
			log.Warn("verbs: ignoring invalid environment value", "var", "MC_MTU", "value", s, "want", "512|1024|2048|4096")
		} else {
			c.MTU = m
		}
	}
	if v, ok := r.int("MC_IB_TC", 0, 255); ok {
		c.TrafficClass = v
	}
	if v, ok := r.int("MC_IB_SL", 0, 15); ok {
		c.ServiceLevel = v
	}
	if v, ok := r.int("MC_MAX_WR", 1, 1<<20); ok {
		c.MaxWR = v
	}
	if v, ok := r.int("MC_MAX_SGE", 1, 1<<10); ok {
		c.MaxSGE = v
	}
	if v, ok := r.int("MC_MAX_INLINE", 0, 1<<16); ok {
		c.MaxInline = v
	}
	if v, ok := r.int("MC_MAX_CQE_PER_CTX", 1, 1<<24); ok {
		c.MaxCQE = v
	}
	if v, ok := r.int("MC_PKEY_INDEX", 0, 65535); ok {
		c.PKeyIndex = uint16(v)
	}
	return c
}

type envReader struct {
	lookup func(string) (string, bool)
	log    *slog.Logger
}

func (r envReader) get(name string) (string, bool) {
	if r.lookup == nil {
		return "", false
	}
	s, ok := r.lookup(name)
	s = strings.TrimSpace(s)
	return s, ok && s != ""
}

func (r envReader) int(name string, lo, hi int) (int, bool) {
	s, ok := r.get(name)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		r.log.Warn("verbs: ignoring invalid environment value", "var", name, "value", s,
			"min", lo, "max", hi)
		return 0, false
	}
	return v, true
}

// Clamp lowers MaxWR, MaxSGE and MaxCQE to the device limits (a zero
// limit is ignored), as Mooncake's updateGlobalConfig does.
func (c Config) Clamp(d DeviceAttr) Config {
	if d.MaxQPWR > 0 && c.MaxWR > d.MaxQPWR {
		c.MaxWR = d.MaxQPWR
	}
	if d.MaxSGE > 0 && c.MaxSGE > d.MaxSGE {
		c.MaxSGE = d.MaxSGE
	}
	if d.MaxCQE > 0 && c.MaxCQE > d.MaxCQE {
		c.MaxCQE = d.MaxCQE
	}
	return c
}

// QPCaps returns the QP capacities of c.
func (c Config) QPCaps() QPCaps {
	return QPCaps{MaxSendWR: uint32(c.MaxWR), MaxRecvWR: uint32(c.MaxWR),
		MaxSGE: uint32(c.MaxSGE), MaxInline: uint32(c.MaxInline)}
}

// PathMTU returns min(active, c.MTU).
func (c Config) PathMTU(active MTU) MTU {
	if active != 0 && active < c.MTU {
		return active
	}
	return c.MTU
}
