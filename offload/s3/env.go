package s3

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// envReader reads typed environment variables with Mooncake's grammar:
// strings raw (set-but-empty counts as present), bools and int32s trimmed
// of ASCII whitespace, and an invalid typed value reported as one warning
// line before its default is used.
type envReader struct {
	lookup func(string) (string, bool)
	warn   io.Writer
}

const asciiSpace = " \t\n\r\f\v"

func (e envReader) str(name string) (string, bool) { return e.lookup(name) }

func (e envReader) invalid(name, raw, def string) {
	if e.warn != nil {
		fmt.Fprintf(e.warn, "[Mooncake] Warning: invalid value '%s' for env %s, using default %s\n", raw, name, def)
	}
}

// parseBool accepts 1/true/yes/on/enable and 0/false/no/off/disable,
// case-insensitively, after trimming ASCII whitespace.
func parseBool(raw string) (bool, bool) {
	switch strings.ToLower(strings.Trim(raw, asciiSpace)) {
	case "1", "true", "yes", "on", "enable":
		return true, true
	case "0", "false", "no", "off", "disable":
		return false, true
	}
	return false, false
}

// parseInt32 accepts an optional single leading '+', then a decimal with an
// optional '-', consuming the whole trimmed string and fitting int32.
func parseInt32(raw string) (int32, bool) {
	s := strings.Trim(raw, asciiSpace)
	if strings.HasPrefix(s, "+") {
		s = s[1:]
		if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
			return 0, false
		}
	}
	if s == "" || s[0] == '+' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || i == 0 && s[i] == '-') {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

func (e envReader) boolVar(name string, def bool) bool {
	raw, ok := e.lookup(name)
	if !ok {
		return def
	}
	v, ok := parseBool(raw)
	if !ok {
		d := "0"
		if def {
			d = "1"
		}
		e.invalid(name, raw, d)
		return def
	}
	return v
}

func (e envReader) intVar(name string, def int32) int32 {
	raw, ok := e.lookup(name)
	if !ok {
		return def
	}
	v, ok := parseInt32(raw)
	if !ok {
		e.invalid(name, raw, strconv.Itoa(int(def)))
		return def
	}
	return v
}

func clamp(v, lo, hi int32) int32 { return max(lo, min(v, hi)) }
