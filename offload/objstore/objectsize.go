package objstore

import (
	"net/http"
	"strconv"
	"strings"
)

// checkObjectSize fails a whole-object GET (c.ObjectSize > 0) whose reply
// states another object size: the Content-Range total of a 206 or 416, or
// the Content-Length (else the bytes read) of a 200. A reply that states
// no size, or "*", is left to the other checks. The error is an
// INVALID_PARAMS *Error naming both sizes, with ErrObjectSize as cause.
func (e *Executor) checkObjectSize(c *Call, o *Outcome) error {
	if c.ObjectSize <= 0 || o.Header == nil {
		return nil
	}
	var (
		total int64
		known bool
	)
	switch o.Status {
	case http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		total, known = contentRangeTotal(o.Header.Get("Content-Range"))
	case http.StatusOK:
		if v := o.Header.Get("Content-Length"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			total, known = n, err == nil && n >= 0
		} else if o.Overflow {
			return e.sizeError(c, o, "stored object holds more than "+strconv.Itoa(len(c.Buf))+
				" bytes, expected "+strconv.FormatInt(c.ObjectSize, 10))
		} else {
			total, known = int64(o.N), true
		}
	}
	if !known || total == c.ObjectSize {
		return nil
	}
	return e.sizeError(c, o, "stored object holds "+strconv.FormatInt(total, 10)+
		" bytes, expected "+strconv.FormatInt(c.ObjectSize, 10))
}

func (e *Executor) sizeError(c *Call, o *Outcome, msg string) error {
	err := e.fail(CodeInvalidParams, "GET", c, o, msg)
	if ee, ok := err.(*Error); ok {
		ee.Err = ErrObjectSize
	}
	return err
}

// contentRangeTotal returns the complete length of a Content-Range value
// ("bytes a-b/TOTAL" or "bytes */TOTAL"); ok is false when the value is
// malformed or the length is "*".
func contentRangeTotal(v string) (total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return 0, false
	}
	t := rest[i+1:]
	if t == "" || t == "*" {
		return 0, false
	}
	for j := 0; j < len(t); j++ {
		if t[j] < '0' || t[j] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
