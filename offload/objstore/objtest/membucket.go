package objtest

import (
	"encoding/xml"
	"fmt"
	"hash/crc64"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// MemBucket is an in-memory, path-style bucket served over HTTP for
// functional adapter tests. It understands PUT, GET (with Range and the
// OSS "x-oss-range-behavior: standard" semantics), HEAD, DELETE,
// ListObjectsV2 (encoding-type=url, pages of PageSize keys) and multipart
// upload (?uploads, ?partNumber&uploadId, ?uploadId). Object keys are the
// wire path segments decoded once, so they equal the adapter's physical
// keys.
type MemBucket struct {
	Bucket string
	// PageSize is the number of keys per LIST page (default 1000, capped
	// by the request's max-keys).
	PageSize int
	// Authorize, when set, vets each request before it is served; an
	// error answers 403 SignatureDoesNotMatch with the error text.
	Authorize func(r *http.Request) error
	// CRC64Header, when set, names the response header that carries the
	// CRC-64/ECMA of the whole object on GET and of the body on PUT
	// (e.g. "x-oss-hash-crc64ecma").
	CRC64Header string

	mu      sync.Mutex
	objects map[string][]byte
	uploads map[string]map[int][]byte
	nextID  int
	log     []string
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// Objects returns a copy of the stored objects by physical key.
func (b *MemBucket) Objects() map[string][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := make(map[string][]byte, len(b.objects))
	for k, v := range b.objects {
		m[k] = append([]byte(nil), v...)
	}
	return m
}

// Log returns "METHOD target" for every request served, in order.
func (b *MemBucket) Log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

func xmlError(w http.ResponseWriter, status int, code, msg string) {
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message><RequestId>memreq</RequestId></Error>", code, xmlEscape(msg))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func parseQuery(raw string) map[string]string {
	q := map[string]string{}
	if raw == "" {
		return q
	}
	for _, p := range strings.Split(raw, "&") {
		n, v, _ := strings.Cut(p, "=")
		q[objstore.URIDecode(n)] = objstore.URIDecode(v)
	}
	return q
}

// ServeHTTP serves one request.
func (b *MemBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	if b.objects == nil {
		b.objects = map[string][]byte{}
		b.uploads = map[string]map[int][]byte{}
	}
	b.log = append(b.log, r.Method+" "+r.RequestURI)
	b.mu.Unlock()
	if b.Authorize != nil {
		if err := b.Authorize(r); err != nil {
			xmlError(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
			return
		}
	}
	path, rawq, _ := strings.Cut(r.RequestURI, "?")
	q := parseQuery(rawq)
	prefix := "/" + b.Bucket + "/"
	if !strings.HasPrefix(path, prefix) {
		xmlError(w, http.StatusNotFound, "NoSuchBucket", "no such bucket")
		return
	}
	key := objstore.URIDecode(path[len(prefix):])
	if key == "" {
		if r.Method == http.MethodGet && q["list-type"] == "2" {
			b.list(w, q)
			return
		}
		xmlError(w, http.StatusBadRequest, "InvalidRequest", "bucket operation not supported")
		return
	}
	switch r.Method {
	case http.MethodPut:
		b.put(w, r, key, q)
	case http.MethodGet, http.MethodHead:
		b.get(w, r, key)
	case http.MethodDelete:
		b.mu.Lock()
		if id, ok := q["uploadId"]; ok {
			delete(b.uploads, id)
		} else {
			delete(b.objects, key)
		}
		b.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		b.post(w, r, key, q)
	default:
		xmlError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

func (b *MemBucket) put(w http.ResponseWriter, r *http.Request, key string, q map[string]string) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		xmlError(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := q["uploadId"]; ok {
		parts, ok := b.uploads[id]
		n, err := strconv.Atoi(q["partNumber"])
		if !ok || err != nil || n < 1 {
			xmlError(w, http.StatusNotFound, "NoSuchUpload", "no such upload")
			return
		}
		parts[n] = data
		w.Header().Set("ETag", fmt.Sprintf("\"part-%d-%d\"", n, len(data)))
		w.WriteHeader(http.StatusOK)
		return
	}
	b.objects[key] = data
	if b.CRC64Header != "" {
		w.Header().Set(b.CRC64Header, strconv.FormatUint(crc64.Checksum(data, crcTable), 10))
	}
	w.Header().Set("ETag", "\"obj\"")
	w.WriteHeader(http.StatusOK)
}

func (b *MemBucket) get(w http.ResponseWriter, r *http.Request, key string) {
	b.mu.Lock()
	data, ok := b.objects[key]
	b.mu.Unlock()
	if !ok {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		xmlError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	if b.CRC64Header != "" {
		w.Header().Set(b.CRC64Header, strconv.FormatUint(crc64.Checksum(data, crcTable), 10))
	}
	rng := r.Header.Get("Range")
	if rng == "" || r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(data)
		}
		return
	}
	var lo, hi int64
	if _, err := fmt.Sscanf(rng, "bytes=%d-%d", &lo, &hi); err != nil || lo > hi || lo < 0 {
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad range")
		return
	}
	size := int64(len(data))
	if lo >= size {
		xmlError(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range cannot be satisfied.")
		return
	}
	hi = min(hi, size-1)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", lo, hi, size))
	w.Header().Set("Content-Length", strconv.FormatInt(hi-lo+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	_, _ = w.Write(data[lo : hi+1])
}

func (b *MemBucket) post(w http.ResponseWriter, r *http.Request, key string, q map[string]string) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := q["uploads"]; ok {
		b.nextID++
		id := fmt.Sprintf("upload-%d", b.nextID)
		b.uploads[id] = map[int][]byte{}
		fmt.Fprintf(w, "<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>",
			xmlEscape(b.Bucket), xmlEscape(key), id)
		return
	}
	id, ok := q["uploadId"]
	parts, found := b.uploads[id]
	if !ok || !found {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "no such upload")
		return
	}
	var doc struct {
		Parts []struct {
			PartNumber int
			ETag       string
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil || len(doc.Parts) == 0 {
		xmlError(w, http.StatusBadRequest, "MalformedXML", "bad completion document")
		return
	}
	var data []byte
	for i, p := range doc.Parts {
		d, ok := parts[p.PartNumber]
		if !ok || p.PartNumber != i+1 || p.ETag != fmt.Sprintf("\"part-%d-%d\"", p.PartNumber, len(d)) {
			xmlError(w, http.StatusBadRequest, "InvalidPart", "part mismatch")
			return
		}
		data = append(data, d...)
	}
	b.objects[key] = data
	delete(b.uploads, id)
	fmt.Fprintf(w, "<CompleteMultipartUploadResult><Key>%s</Key></CompleteMultipartUploadResult>", xmlEscape(key))
}

func (b *MemBucket) list(w http.ResponseWriter, q map[string]string) {
	b.mu.Lock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, q["prefix"]) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	sizes := make([]int, len(keys))
	for i, k := range keys {
		sizes[i] = len(b.objects[k])
	}
	b.mu.Unlock()
	page := b.PageSize
	if page <= 0 {
		page = 1000
	}
	if mk, err := strconv.Atoi(q["max-keys"]); err == nil && mk > 0 && mk < page {
		page = mk
	}
	start := 0
	if tok := q["continuation-token"]; tok != "" {
		start = sort.SearchStrings(keys, tok)
	}
	enc := func(s string) string { return s }
	if q["encoding-type"] == "url" {
		enc = func(s string) string { return objstore.URIEncode(s, true) }
	}
	end := min(start+page, len(keys))
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<ListBucketResult>")
	fmt.Fprintf(&sb, "<Name>%s</Name><Prefix>%s</Prefix><MaxKeys>%d</MaxKeys><KeyCount>%d</KeyCount>",
		xmlEscape(b.Bucket), xmlEscape(enc(q["prefix"])), page, end-start)
	for i := start; i < end; i++ {
		fmt.Fprintf(&sb, "<Contents><Key>%s</Key><Size>%d</Size><ETag>\"x\"</ETag></Contents>", xmlEscape(enc(keys[i])), sizes[i])
	}
	if end < len(keys) {
		fmt.Fprintf(&sb, "<IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken>",
			xmlEscape(objstore.URIEncode(keys[end], false)))
	} else {
		sb.WriteString("<IsTruncated>false</IsTruncated>")
	}
	sb.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Length", strconv.Itoa(sb.Len()))
	_, _ = io.WriteString(w, sb.String())
}
