package oss

import (
	"hash/crc64"
	"strconv"
	"strings"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// CRC64Header is the header OSS uses for an object's CRC-64/ECMA.
const CRC64Header = "x-oss-hash-crc64ecma"

var crcTable = crc64.MakeTable(crc64.ECMA)

// verifyCRC64 checks x-oss-hash-crc64ecma when the exchange covers the
// whole object: a GET at offset 0 whose Content-Range total equals the
// bytes read, or a PUT (the reply's CRC of the stored object).
func verifyCRC64(c *objstore.Call, o *objstore.Outcome) error {
	want := o.Header.Get(CRC64Header)
	if want == "" {
		return nil
	}
	w, err := strconv.ParseUint(want, 10, 64)
	if err != nil {
		return nil
	}
	switch c.Method {
	case "GET":
		if c.Off != 0 || !wholeObject(o.Header.Get("Content-Range"), len(c.Buf)) {
			return nil
		}
		if got := crc64.Checksum(c.Buf[:o.N], crcTable); got != w {
			return &objstore.Error{Code: objstore.CodeFileReadFail, Op: "GET", Key: c.LogicalKey, Status: o.Status,
				Msg: "CRC-64 mismatch: got " + strconv.FormatUint(got, 10) + ", service says " + want}
		}
	case "PUT":
		if c.Query != "" { // multipart parts carry the part CRC; skip
			return nil
		}
		var got uint64
		for _, b := range c.Body {
			got = crc64.Update(got, crcTable, b)
		}
		if got != w {
			return &objstore.Error{Code: objstore.CodeFileWriteFail, Op: "PUT", Key: c.LogicalKey, Status: o.Status,
				Msg: "CRC-64 mismatch: sent " + strconv.FormatUint(got, 10) + ", service stored " + want}
		}
	}
	return nil
}

// wholeObject reports whether "bytes 0-(n-1)/n" describes n bytes.
func wholeObject(cr string, n int) bool {
	_, total, ok := strings.Cut(cr, "/")
	if !ok {
		return false
	}
	t, err := strconv.Atoi(total)
	return err == nil && t == n
}
