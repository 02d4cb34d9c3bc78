package verbs

import (
	"fmt"
	"net/netip"
)

// GID is a 16-byte global identifier (an IPv6 address for RoCE).
type GID [16]byte

// GIDTextLen is the length of a GID's text form.
const GIDTextLen = 16*3 - 1

const hexDigits = "0123456789abcdef"

// String returns the Mooncake text form: 16 bytes as two lowercase hex
// digits each, joined by ':' (47 characters).
func (g GID) String() string {
	var b [GIDTextLen]byte
	g.put(b[:])
	return string(b[:])
}

// AppendText appends the text form of g to b.
func (g GID) AppendText(b []byte) ([]byte, error) {
	n := len(b)
	b = append(b, make([]byte, GIDTextLen)...)
	g.put(b[n:])
	return b, nil
}

// MarshalText implements encoding.TextMarshaler.
func (g GID) MarshalText() ([]byte, error) { return g.AppendText(nil) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseGID.
func (g *GID) UnmarshalText(b []byte) error {
	v, err := parseGID(b)
	if err != nil {
		return err
	}
	*g = v
	return nil
}

func (g GID) put(b []byte) {
	for i, c := range g {
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i] = hexDigits[c>>4]
		b[3*i+1] = hexDigits[c&0xf]
	}
}

// ParseGID parses the text form String produces. Hex digits may be upper
// or lower case; anything else (wrong length, separators, digits) is an
// error wrapping ErrInvalidArgument.
func ParseGID(s string) (GID, error) { return parseGID([]byte(s)) }

func parseGID(s []byte) (GID, error) {
	var g GID
	if len(s) != GIDTextLen {
		return g, fmt.Errorf("%w: GID %q: want %d characters, got %d", ErrInvalidArgument, s, GIDTextLen, len(s))
	}
	for i := range g {
		if i > 0 && s[3*i-1] != ':' {
			return GID{}, fmt.Errorf("%w: GID %q: byte %d not preceded by ':'", ErrInvalidArgument, s, i)
		}
		hi, ok1 := unhex(s[3*i])
		lo, ok2 := unhex(s[3*i+1])
		if !ok1 || !ok2 {
			return GID{}, fmt.Errorf("%w: GID %q: byte %d is not two hex digits", ErrInvalidArgument, s, i)
		}
		g[i] = hi<<4 | lo
	}
	return g, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsZero reports whether g is all zeros (an empty GID table slot).
func (g GID) IsZero() bool { return g == GID{} }

// Addr returns g as an IP address; an IPv4-mapped GID (RoCE over IPv4)
// comes back as the IPv4 address, so callers can classify it (private,
// link-local, routable).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// GIDFromAddr returns the GID of an IP address (IPv4 is mapped into
// ::ffff:0:0/96, as RoCE v2 does).
func GIDFromAddr(a netip.Addr) GID { return GID(a.As16()) }
