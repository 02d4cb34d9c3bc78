package metadata

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Limits of MC_HANDSHAKE_MAX_LENGTH, the largest frame length accepted.
const (
	DefaultMaxFrameLength uint64 = 1 << 20
	MinMaxFrameLength     uint64 = 1
	MaxMaxFrameLength     uint64 = 128 << 20
)

// frameHeaderLen is the u64 length field.
const frameHeaderLen = 8

// String names the frame type.
func (t FrameType) String() string {
	switch t {
	case FrameConnection:
		return "connection"
	case FrameMetadata:
		return "metadata"
	case FrameNotify:
		return "notify"
	case FrameProbe:
		return "probe"
	}
	return fmt.Sprintf("frametype(%d)", uint8(t))
}

// AppendFrame appends one frame (u64 little-endian length counting the
// type byte, the type byte, body) to dst and returns the extended slice.
// body should already carry Mooncake's trailing "\n" (EncodeDesc and the
// other encoders of this package add it).
func AppendFrame(dst []byte, typ FrameType, body []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(body))+1)
	dst = append(dst, byte(typ))
	return append(dst, body...)
}

// WriteFrame writes one frame to w in a single Write call.
func WriteFrame(w io.Writer, typ FrameType, body []byte) error {
	buf := AppendFrame(make([]byte, 0, frameHeaderLen+1+len(body)), typ, body)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write %v frame: %w", typ, err)
	}
	return nil
}

// checkLen validates a frame length field against max.
func checkLen(n, max uint64) error {
	if n == 0 {
		return fmt.Errorf("%w: length 0 (must count the type byte)", ErrBadFrame)
	}
	if n > max {
		return fmt.Errorf("%w: length %d exceeds the maximum %d", ErrFrameTooLarge, n, max)
	}
	return nil
}

// splitTyped turns the first byte after the length and the rest into a
// type and a body. A first byte greater than 3 is a legacy untyped frame:
// the byte belongs to the body and the frame is a Connection frame.
func splitTyped(first byte, rest []byte) (FrameType, []byte) {
	if first > byte(FrameProbe) {
		body := make([]byte, 0, len(rest)+1)
		body = append(body, first)
		return FrameConnection, append(body, rest...)
	}
	return FrameType(first), rest
}

// ReadFrame reads one frame from r, reassembling it from however many
// reads it takes. A length above max (or zero) fails before any body byte
// is read or allocated; max 0 means DefaultMaxFrameLength. The returned
// body is newly allocated and owned by the caller. An io.EOF before the
// first byte is returned as io.EOF; a stream that ends inside the frame
// gives ErrTruncated.
func ReadFrame(r io.Reader, max uint64) (FrameType, []byte, error) {
	if max == 0 {
		max = DefaultMaxFrameLength
	}
	var hdr [frameHeaderLen + 1]byte
	if _, err := io.ReadFull(r, hdr[:frameHeaderLen]); err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("%w: stream ended inside the length field", ErrTruncated)
		}
		return 0, nil, fmt.Errorf("read frame length: %w", err)
	}
	n := binary.LittleEndian.Uint64(hdr[:frameHeaderLen])
	if err := checkLen(n, max); err != nil {
		return 0, nil, err
	}
	if _, err := io.ReadFull(r, hdr[frameHeaderLen:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("%w: stream ended before the type byte", ErrTruncated)
		}
		return 0, nil, fmt.Errorf("read frame type: %w", err)
	}
	rest := make([]byte, n-1)
	if got, err := io.ReadFull(r, rest); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("%w: got %d of %d body bytes", ErrTruncated, got, n-1)
		}
		return 0, nil, fmt.Errorf("read frame body: %w", err)
	}
	typ, body := splitTyped(hdr[frameHeaderLen], rest)
	return typ, body, nil
}

// DecodeFrame decodes one frame from the start of b. It returns the type,
// the body (a sub-slice of b, except for legacy frames, whose body is a
// copy) and the number of bytes consumed. A length above max (0 means
// DefaultMaxFrameLength) or a short buffer is an error.
func DecodeFrame(b []byte, max uint64) (typ FrameType, body []byte, n int, err error) {
	if max == 0 {
		max = DefaultMaxFrameLength
	}
	if len(b) < frameHeaderLen {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes, need 8 for the length field", ErrTruncated, len(b))
	}
	l := binary.LittleEndian.Uint64(b)
	if err := checkLen(l, max); err != nil {
		return 0, nil, 0, err
	}
	if uint64(len(b)-frameHeaderLen) < l {
		return 0, nil, 0, fmt.Errorf("%w: length %d, %d bytes present", ErrTruncated, l, len(b)-frameHeaderLen)
	}
	end := frameHeaderLen + int(l)
	typ, body = splitTyped(b[frameHeaderLen], b[frameHeaderLen+1:end:end])
	return typ, body, end, nil
}
