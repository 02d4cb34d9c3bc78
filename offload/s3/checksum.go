package s3

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"

	"github.com/ferrylabs/ferry/offload/objstore"
)

const (
	hdrChecksumMode   = "X-Amz-Checksum-Mode"
	hdrChecksumCRC32C = "X-Amz-Checksum-Crc32c"
	hdrChecksumCRC32  = "X-Amz-Checksum-Crc32"
	hdrChecksumType   = "X-Amz-Checksum-Type"
)

var (
	castagnoli          = crc32.MakeTable(crc32.Castagnoli)
	checksumModeEnabled = []string{"ENABLED"}
)

// crc32cBase64 returns the base64 of the big-endian CRC32C of the
// concatenation of bufs, the x-amz-checksum-crc32c form.
func crc32cBase64(bufs [][]byte) string {
	var crc uint32
	for _, b := range bufs {
		crc = crc32.Update(crc, castagnoli, b)
	}
	var raw [4]byte
	binary.BigEndian.PutUint32(raw[:], crc)
	return base64.StdEncoding.EncodeToString(raw[:])
}

// wholeObject reports whether a 206 response covers its whole object:
// Content-Range "bytes 0-(n-1)/n" with n == want.
func wholeObject(h http.Header, want int) bool {
	v := h.Get("Content-Range")
	rest, ok := strings.CutPrefix(v, "bytes 0-")
	if !ok {
		return false
	}
	last, total, ok := strings.Cut(rest, "/")
	if !ok {
		return false
	}
	l, err1 := strconv.ParseInt(last, 10, 64)
	t, err2 := strconv.ParseInt(total, 10, 64)
	return err1 == nil && err2 == nil && l+1 == t && t == int64(want)
}

// verifyChecksum checks a successful GET against the full-object CRC32C or
// CRC32 the server returned, when the response covers the whole object and
// the checksum is not a composite (multipart) one. A mismatch is
// FILE_READ_FAIL: the bytes in the buffer are not the stored object.
// PUT checksums are verified by the server (it rejects a mismatching body
// with 400 BadDigest), so nothing is checked here for writes.
func verifyChecksum(c *objstore.Call, o *objstore.Outcome) error {
	if c.Method != http.MethodGet || o.Header == nil {
		return nil
	}
	if t := o.Header[hdrChecksumType]; len(t) > 0 && strings.EqualFold(t[0], "COMPOSITE") {
		return nil
	}
	var table *crc32.Table
	var v []string
	if v = o.Header[hdrChecksumCRC32C]; len(v) > 0 {
		table = castagnoli
	} else if v = o.Header[hdrChecksumCRC32]; len(v) > 0 {
		table = crc32.IEEETable
	} else {
		return nil
	}
	if !wholeObject(o.Header, len(c.Buf)) {
		return nil
	}
	var raw [8]byte
	n, err := base64.StdEncoding.Decode(raw[:], []byte(v[0]))
	if err != nil || n != 4 {
		return nil // composite ("...-N") or an unknown form: nothing to compare
	}
	if crc32.Checksum(c.Buf, table) != binary.BigEndian.Uint32(raw[:4]) {
		return &objstore.Error{Code: objstore.CodeFileReadFail, Op: "GET", Key: c.LogicalKey, Status: o.Status,
			Msg: "checksum mismatch: the received bytes differ from the stored object"}
	}
	return nil
}
