package objstore

import (
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LookupFunc reports the value of an environment variable and whether it
// is set. os.LookupEnv is one; tests pass a map lookup.
type LookupFunc func(name string) (string, bool)

// MapLookup returns a LookupFunc over m (a key present with "" is set).
func MapLookup(m map[string]string) LookupFunc {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Env reads typed environment variables with Mooncake's rules and records
// every warning, in order. Each warning is also logged at WARN level to
// the Logger given to NewEnv. An Env is used by one goroutine at a time.
type Env struct {
	lookup   LookupFunc
	log      *slog.Logger
	warnings []string
}

// NewEnv returns an Env over lookup (nil: os.LookupEnv) that logs its
// warnings to log (nil: slog.Default()).
func NewEnv(lookup LookupFunc, log *slog.Logger) *Env {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if log == nil {
		log = slog.Default()
	}
	return &Env{lookup: lookup, log: log}
}

// Lookup reads one variable as is.
func (e *Env) Lookup(name string) (string, bool) { return e.lookup(name) }

// String returns the value of the first of names that is set, even when
// that value is empty (a present primary beats its aliases), else "".
// The value is not trimmed.
func (e *Env) String(names ...string) string {
	v, _ := e.StringOK(names...)
	return v
}

// StringOK is String that also reports whether any of names was set.
func (e *Env) StringOK(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := e.lookup(n); ok {
			return v, true
		}
	}
	return "", false
}

// Warn records a warning and logs it.
func (e *Env) Warn(msg string) {
	e.warnings = append(e.warnings, msg)
	e.log.LogAttrs(context.Background(), slog.LevelWarn, msg)
}

// Warnings returns the warnings recorded so far, oldest first. The slice
// belongs to the caller.
func (e *Env) Warnings() []string {
	return append([]string(nil), e.warnings...)
}

// InvalidValueWarning is Mooncake's warning text for an invalid typed value.
func InvalidValueWarning(name, raw, def string) string {
	return "[Mooncake] Warning: invalid value '" + raw + "' for env " + name + ", using default " + def
}

// Bool reads a bool variable. Unset gives def silently; an invalid value
// gives def and a warning (the default printed as 0 or 1).
func (e *Env) Bool(name string, def bool) bool {
	raw, ok := e.lookup(name)
	if !ok {
		return def
	}
	if v, ok := ParseBool(raw); ok {
		return v
	}
	d := "0"
	if def {
		d = "1"
	}
	e.Warn(InvalidValueWarning(name, raw, d))
	return def
}

// Int reads a 32-bit signed int variable. Unset gives def silently; an
// invalid value gives def and a warning. Clamping is the caller's job and
// applies after the default.
func (e *Env) Int(name string, def int32) int32 {
	raw, ok := e.lookup(name)
	if !ok {
		return def
	}
	if v, ok := ParseInt32(raw); ok {
		return v
	}
	e.Warn(InvalidValueWarning(name, raw, strconv.Itoa(int(def))))
	return def
}

const asciiSpace = " \t\n\r\f\v"

// TrimASCIISpace trims space, \t, \n, \r, \f and \v from both ends.
func TrimASCIISpace(s string) string { return strings.Trim(s, asciiSpace) }

// TrimTrailingSlashes removes every trailing '/' ("https://x///" -> "https://x").
func TrimTrailingSlashes(s string) string { return strings.TrimRight(s, "/") }

// ParseBool parses Mooncake's bool grammar: after ASCII trimming, one of
// 1 true yes on enable (true) or 0 false no off disable (false), case-
// insensitively. ok is false for anything else, including "".
func ParseBool(s string) (v, ok bool) {
	switch strings.ToLower(TrimASCIISpace(s)) {
	case "1", "true", "yes", "on", "enable":
		return true, true
	case "0", "false", "no", "off", "disable":
		return false, true
	}
	return false, false
}

// ParseInt32 parses Mooncake's int grammar: after ASCII trimming, one
// optional '+', then decimal digits with an optional '-' that must all be
// consumed and fit in int32. "", "++5", "+-5", "65536bytes" and
// "2147483648" are invalid.
func ParseInt32(s string) (int32, bool) {
	s = TrimASCIISpace(s)
	if strings.HasPrefix(s, "+") {
		s = s[1:]
		if s == "" || s[0] == '+' || s[0] == '-' {
			return 0, false
		}
	}
	neg := false
	if strings.HasPrefix(s, "-") {
		neg = true
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, false
	}
	return int32(v), true
}

// Tuning defaults and bounds (the same for OSS and S3).
const (
	DefaultMaxConnections    = 64
	DefaultReceiveBufferSize = 1 << 20
	DefaultUploadBufferSize  = 1 << 20
	MinReceiveBufferSize     = 16384
	MaxReceiveBufferSize     = 10 << 20
	MinUploadBufferSize      = 16384
	MaxUploadBufferSize      = 2 << 20
)

// Tuning holds the connection and buffer settings of an adapter.
type Tuning struct {
	MaxConnections    int // requests in flight per batch, >= 1
	ReceiveBufferSize int // bytes, in [16384, 10485760]
	UploadBufferSize  int // bytes, in [16384, 2097152]
}

// ReadTuning reads <prefix>MAX_CONNECTIONS, <prefix>RECEIVE_BUFFER_SIZE
// and <prefix>UPLOAD_BUFFER_SIZE in that order (prefix such as
// "MOONCAKE_OSS_"), each with its default on an invalid value and then its
// clamp: max(1, v), [16384, 10485760] and [16384, 2097152].
func ReadTuning(e *Env, prefix string) Tuning {
	mc := int(e.Int(prefix+"MAX_CONNECTIONS", DefaultMaxConnections))
	rb := int(e.Int(prefix+"RECEIVE_BUFFER_SIZE", DefaultReceiveBufferSize))
	ub := int(e.Int(prefix+"UPLOAD_BUFFER_SIZE", DefaultUploadBufferSize))
	return Tuning{
		MaxConnections:    max(1, mc),
		ReceiveBufferSize: min(max(rb, MinReceiveBufferSize), MaxReceiveBufferSize),
		UploadBufferSize:  min(max(ub, MinUploadBufferSize), MaxUploadBufferSize),
	}
}

// Backend selection defaults.
const (
	DefaultAdapterType = "hf3fs"
	DefaultRootDir     = "/mnt/3fs/mooncake"
)

// AdapterType returns MOONCAKE_DFS_FS_ADAPTER if set (even empty), else
// MOONCAKE_DISTRIBUTED_FS_TYPE, else "hf3fs". "oss" and "s3" select object
// storage.
func AdapterType(e *Env) string {
	if v, ok := e.StringOK("MOONCAKE_DFS_FS_ADAPTER", "MOONCAKE_DISTRIBUTED_FS_TYPE"); ok {
		return v
	}
	return DefaultAdapterType
}

// IsObjectStorage reports whether an adapter type selects object storage.
func IsObjectStorage(adapterType string) bool {
	return adapterType == "oss" || adapterType == "s3"
}

// RootDir returns MOONCAKE_DFS_ROOT_DIR if set (even empty), else
// MOONCAKE_DISTRIBUTED_ROOT_DIR, else "/mnt/3fs/mooncake". A non-empty
// relative value is made absolute against cwd (the process directory when
// cwd is "") without cleaning (".." stays). The result is the key prefix given to the adapter.
func RootDir(e *Env, cwd string) string {
	v, ok := e.StringOK("MOONCAKE_DFS_ROOT_DIR", "MOONCAKE_DISTRIBUTED_ROOT_DIR")
	if !ok {
		v = DefaultRootDir
	}
	if v == "" || filepath.IsAbs(v) {
		return v
	}
	if cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			cwd = wd
		}
	}
	return strings.TrimRight(cwd, "/") + "/" + v
}
