package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire sizes and constants of Mooncake's TCP data protocol.
const (
	// HeaderSize is the size of a session header: u64 LE size, u64 LE
	// remote address, u8 opcode, 7 padding bytes.
	HeaderSize = 24
	// StatusSize is the size of a v2 status frame.
	StatusSize = 8

	opRead   = 0x00
	opWrite  = 0x01
	opV2Flag = 0x80

	statusMagic = uint64(0x4D435456) << 32
)

// Status codes carried in a v2 status frame.
const (
	// StatusOK means the request was served.
	StatusOK uint32 = 0
	// StatusAddrRejected means [addr, addr+size) is not inside one
	// registered buffer of the server; the server closes the connection
	// after sending it.
	StatusAddrRejected uint32 = 1
)

// Errors of the wire codec.
var (
	// ErrBadHeader means 24 bytes were not a valid session header.
	ErrBadHeader = errors.New("tcp: malformed session header")
	// ErrBadStatus means 8 bytes were not a valid v2 status frame.
	ErrBadStatus = errors.New("tcp: malformed status frame")
)

// Header is a decoded session header.
type Header struct {
	// Size is the payload length in bytes.
	Size uint64
	// Addr is the server-side virtual address.
	Addr uint64
	// Write is true for WRITE (client to server), false for READ.
	Write bool
	// V2 is true when the client expects status frames.
	V2 bool
}

// PutHeader encodes h into b[:HeaderSize] with zero padding. b must hold at
// least HeaderSize bytes.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint64(b[0:8], h.Size)
	binary.LittleEndian.PutUint64(b[8:16], h.Addr)
	op := byte(opRead)
	if h.Write {
		op = opWrite
	}
	if h.V2 {
		op |= opV2Flag
	}
	b[16] = op
	clear(b[17:HeaderSize])
}

// ParseHeader decodes a session header. The padding bytes are ignored
// (Mooncake leaves them uninitialized). It fails with ErrBadHeader when b is
// short or the opcode is neither READ nor WRITE.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadHeader, len(b), HeaderSize)
	}
	op := b[16]
	h := Header{
		Size: binary.LittleEndian.Uint64(b[0:8]),
		Addr: binary.LittleEndian.Uint64(b[8:16]),
		V2:   op&opV2Flag != 0,
	}
	switch op &^ opV2Flag {
	case opRead:
	case opWrite:
		h.Write = true
	default:
		return Header{}, fmt.Errorf("%w: opcode %#02x", ErrBadHeader, op)
	}
	return h, nil
}

// PutStatus encodes a v2 status frame with code into b[:StatusSize].
func PutStatus(b []byte, code uint32) {
	binary.LittleEndian.PutUint64(b[:StatusSize], statusMagic|uint64(code))
}

// ParseStatus decodes a v2 status frame. It fails with ErrBadStatus when b
// is short or the magic is not "MCTV".
func ParseStatus(b []byte) (uint32, error) {
	if len(b) < StatusSize {
		return 0, fmt.Errorf("%w: %d bytes, want %d", ErrBadStatus, len(b), StatusSize)
	}
	v := binary.LittleEndian.Uint64(b[:StatusSize])
	if v&^0xFFFFFFFF != statusMagic {
		return 0, fmt.Errorf("%w: magic %#08x", ErrBadStatus, v>>32)
	}
	return uint32(v), nil
}
