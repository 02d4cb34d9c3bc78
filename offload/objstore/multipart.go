package objstore

import (
	"bytes"
	"context"
	"encoding/xml"
	"strconv"
)

// Multipart is the protocol half of a multipart upload, supplied by an
// adapter; the Executor supplies the machinery (splitting the caller's
// slices into parts without copying, uploading parts in parallel under
// the connection limit, completing, and aborting on failure). Keys are
// physical keys.
type Multipart interface {
	// Create starts an upload and returns its id.
	Create(ctx context.Context, e *Executor, key string) (uploadID string, err error)
	// PartQuery returns the canonical query string addressing part
	// (1-based) of the upload; the part is sent as a PUT with that query
	// and its ETag is read from the response's ETag header.
	PartQuery(uploadID string, part int) string
	// Complete commits the parts, given their ETags in part order.
	Complete(ctx context.Context, e *Executor, key, uploadID string, etags []string) error
	// Abort discards the upload; it is best effort.
	Abort(ctx context.Context, e *Executor, key, uploadID string) error
}

// ParseUploadID returns the UploadId of a CreateMultipartUpload (S3) or
// InitiateMultipartUpload (OSS) reply; "" when the document is malformed
// or names no upload.
func ParseUploadID(body []byte) string {
	var doc struct {
		UploadID string `xml:"UploadId"`
	}
	if xml.Unmarshal(body, &doc) != nil {
		return ""
	}
	return doc.UploadID
}

// CompleteMultipartBody returns the CompleteMultipartUpload document S3
// and OSS share: etags (XML-escaped) as parts 1..len(etags) in order. The
// returned slice is new and belongs to the caller.
func CompleteMultipartBody(etags []string) []byte {
	var b bytes.Buffer
	b.WriteString("<CompleteMultipartUpload>")
	for i, t := range etags {
		b.WriteString("<Part><PartNumber>")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString("</PartNumber><ETag>")
		_ = xml.EscapeText(&b, []byte(t))
		b.WriteString("</ETag></Part>")
	}
	b.WriteString("</CompleteMultipartUpload>")
	return b.Bytes()
}

// SplitVec cuts the concatenation of bufs into parts of partSize bytes
// (the last may be shorter) without copying: every part is a list of
// sub-slices of bufs. Empty slices are dropped.
func SplitVec(bufs [][]byte, partSize int64) [][][]byte {
	var parts [][][]byte
	var cur [][]byte
	var curLen int64
	for _, b := range bufs {
		for len(b) > 0 {
			take := int64(len(b))
			if room := partSize - curLen; take > room {
				take = room
			}
			cur = append(cur, b[:take])
			curLen += take
			b = b[take:]
			if curLen == partSize {
				parts = append(parts, cur)
				cur, curLen = nil, 0
			}
		}
	}
	if curLen > 0 {
		parts = append(parts, cur)
	}
	return parts
}
