package config

import (
	"fmt"
	"strconv"
	"strings"
)

// LookupFunc reports the value of an environment variable and whether it
// is set. os.LookupEnv is one; tests pass a map lookup.
type LookupFunc func(name string) (string, bool)

// reader reads typed variables and collects warnings in order.
type reader struct {
	lookup   LookupFunc
	warnings []string
}

func (r *reader) warn(name, raw string, def any) {
	if b, ok := def.(bool); ok {
		def = 0
		if b {
			def = 1
		}
	}
	r.warnings = append(r.warnings, fmt.Sprintf("invalid value '%s' for env %s, using default %v", raw, name, def))
}

// str returns the first of names that is set (even when empty), else def.
func (r *reader) str(def string, names ...string) string {
	for _, n := range names {
		if v, ok := r.lookup(n); ok {
			return v
		}
	}
	return def
}

// raw returns the first set variable among names and its name.
func (r *reader) raw(names ...string) (string, string, bool) {
	for _, n := range names {
		if v, ok := r.lookup(n); ok {
			return n, v, true
		}
	}
	return "", "", false
}

const asciiSpace = " \t\n\r\f\v"

// parseInt parses Mooncake's integer grammar: ASCII-trimmed, one optional
// leading '+', then an optional '-' and decimal digits filling the rest.
func parseInt(s string, bits int) (int64, bool) {
	s = strings.Trim(s, asciiSpace)
	if strings.HasPrefix(s, "+") {
		s = s[1:]
		if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
			return 0, false
		}
	}
	if s == "" {
		return 0, false
	}
	for i, c := range s {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, false
	}
	return v, true
}

// parseBool parses Mooncake's boolean tokens.
func parseBool(s string) (bool, bool) {
	switch strings.ToLower(strings.Trim(s, asciiSpace)) {
	case "1", "true", "yes", "on", "enable":
		return true, true
	case "0", "false", "no", "off", "disable":
		return false, true
	}
	return false, false
}

// int64In reads a 64-bit integer from the first set variable of names and
// checks it against [lo, hi]; otherwise it warns and returns def.
func (r *reader) int64In(def, lo, hi int64, names ...string) int64 {
	name, v, ok := r.raw(names...)
	if !ok {
		return def
	}
	n, ok := parseInt(v, 64)
	if !ok || n < lo || n > hi {
		r.warn(name, v, def)
		return def
	}
	return n
}

// boolean reads a boolean from the first set variable of names.
func (r *reader) boolean(def bool, names ...string) bool {
	name, v, ok := r.raw(names...)
	if !ok {
		return def
	}
	b, ok := parseBool(v)
	if !ok {
		r.warn(name, v, def)
		return def
	}
	return b
}
