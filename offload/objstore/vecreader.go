package objstore

import (
	"errors"
	"io"
	"math"
)

// VecReader streams the concatenation of a list of byte slices without
// copying them into one buffer. It implements io.ReadSeeker, io.WriterTo
// and io.Closer (a no-op), so net/http can send it as a request body and
// rewind it for a resend. The slices are borrowed, never modified, and
// must stay valid while the reader is in use.
type VecReader struct {
	bufs [][]byte
	size int64
	pos  int64
	i    int // index of the slice holding pos
	off  int // offset of pos inside bufs[i]
}

// errNegativeSeek is returned for a seek before the start.
var errNegativeSeek = errors.New("objstore: VecReader seek before start")

// NewVecReader returns a reader over bufs positioned at the start.
func NewVecReader(bufs [][]byte) *VecReader {
	r := &VecReader{}
	r.Reset(bufs)
	return r
}

// Reset points r at bufs and rewinds it.
func (r *VecReader) Reset(bufs [][]byte) {
	var n int64
	for _, b := range bufs {
		n += int64(len(b))
	}
	*r = VecReader{bufs: bufs, size: n}
}

// Size returns the total length of the slices.
func (r *VecReader) Size() int64 { return r.size }

// Read copies the next bytes into p.
func (r *VecReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.bufs) {
		b := r.bufs[r.i][r.off:]
		c := copy(p[n:], b)
		n += c
		r.off += c
		if r.off >= len(r.bufs[r.i]) {
			r.i++
			r.off = 0
		}
	}
	r.pos += int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes the remaining slices straight to w, one Write per slice.
func (r *VecReader) WriteTo(w io.Writer) (int64, error) {
	return r.writeToLimit(w, math.MaxInt64)
}

// writeToLimit writes at most limit remaining bytes straight to w, one
// Write per slice (or the part of it within limit). A Write that takes
// fewer bytes without an error is io.ErrShortWrite.
func (r *VecReader) writeToLimit(w io.Writer, limit int64) (int64, error) {
	var total int64
	for r.i < len(r.bufs) && total < limit {
		b := r.bufs[r.i][r.off:]
		if rem := limit - total; int64(len(b)) > rem {
			b = b[:rem]
		}
		if len(b) > 0 {
			n, err := w.Write(b)
			total += int64(n)
			r.pos += int64(n)
			r.off += n
			if err != nil {
				return total, err
			}
			if n < len(b) {
				return total, io.ErrShortWrite
			}
		}
		if r.off >= len(r.bufs[r.i]) {
			r.i++
			r.off = 0
		}
	}
	return total, nil
}

// Seek sets the position for the next Read or WriteTo.
func (r *VecReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.size + offset
	default:
		return r.pos, errors.New("objstore: VecReader bad whence")
	}
	if abs < 0 {
		return r.pos, errNegativeSeek
	}
	r.pos, r.i, r.off = abs, 0, 0
	rem := abs
	for r.i < len(r.bufs) && rem >= int64(len(r.bufs[r.i])) {
		rem -= int64(len(r.bufs[r.i]))
		r.i++
	}
	if r.i < len(r.bufs) {
		r.off = int(rem)
	}
	return abs, nil
}

// Close does nothing; the slices belong to the caller.
func (r *VecReader) Close() error { return nil }
