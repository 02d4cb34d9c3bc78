package objstore

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strconv"
)

// CheckGetArgs applies the reference argument checks of GetRange/GetV for
// n requested bytes at off: off < 0 and an off+n-1 overflow are
// INVALID_PARAMS. Adapters call it before their initialisation check.
func CheckGetArgs(op, key string, n int64, off int64) error {
	if off < 0 {
		return Errorf(CodeInvalidParams, op, key, "negative offset %d", off)
	}
	if n < 0 {
		return Errorf(CodeInvalidParams, op, key, "negative length %d", n)
	}
	if n > 0 && off > math.MaxInt64-(n-1) {
		return Errorf(CodeInvalidParams, op, key, "range %d+%d overflows", off, n)
	}
	return nil
}

// MapGet turns the outcome of a GET into the reference result, in this
// order: 404 without a transport error (an overflowed error body counts
// as none) is FILE_NOT_FOUND; a transport error is
// DFS_SERVICE_UNAVAILABLE; for a whole-object read (c.ObjectSize > 0) a
// stated object size other than c.ObjectSize is INVALID_PARAMS (see
// checkObjectSize); an overflow is DFS_SERVICE_UNAVAILABLE; 206 with
// exactly len(c.Buf) bytes is success; anything else (200 included) is
// FILE_READ_FAIL.
func (e *Executor) MapGet(c *Call, o *Outcome) error {
	switch {
	case o.Status == http.StatusNotFound && o.Err == nil:
		return e.fail(CodeFileNotFound, "GET", c, o, "object not found")
	case o.Err != nil:
		return e.fail(CodeDFSServiceUnavailable, "GET", c, o, "transfer failed")
	}
	if err := e.checkObjectSize(c, o); err != nil {
		return err
	}
	switch {
	case o.Overflow:
		return e.fail(CodeDFSServiceUnavailable, "GET", c, o, "body longer than the requested range; transfer aborted")
	case o.Status == http.StatusPartialContent && o.N == len(c.Buf):
		if e.cfg.Verify != nil {
			return e.cfg.Verify(c, o)
		}
		return nil
	case o.Status == http.StatusPartialContent:
		return e.fail(CodeFileReadFail, "GET", c, o, "got "+strconv.Itoa(o.N)+" of "+strconv.Itoa(len(c.Buf))+" bytes")
	}
	return e.fail(CodeFileReadFail, "GET", c, o, "expected 206 Partial Content")
}

// MapPut turns the outcome of a PUT into the reference result: a transport
// error is DFS_SERVICE_UNAVAILABLE, 2xx is success, anything else
// FILE_WRITE_FAIL.
func (e *Executor) MapPut(c *Call, o *Outcome) error {
	switch {
	case o.Err != nil:
		return e.fail(CodeDFSServiceUnavailable, c.Method, c, o, "transfer failed")
	case o.Status/100 == 2:
		if e.cfg.Verify != nil {
			return e.cfg.Verify(c, o)
		}
		return nil
	}
	return e.fail(CodeFileWriteFail, c.Method, c, o, "unexpected status")
}

// fail builds the *Error for an outcome, with the service's error code and
// request id when the response carried them. Only the status, the parsed
// code and the id are kept, never the body.
func (e *Executor) fail(code Code, op string, c *Call, o *Outcome, msg string) error {
	err := &Error{Code: code, Op: op, Key: c.LogicalKey, Status: o.Status, Msg: msg, Err: o.Err}
	if o.Header != nil && e.cfg.RequestIDHeader != "" {
		err.RequestID = o.Header.Get(e.cfg.RequestIDHeader)
	}
	if o.Status >= 300 {
		doc := o.Body
		if c.Method == http.MethodGet && !c.ReadAll && !o.Overflow {
			doc = c.Buf[:o.N]
		}
		err.ServiceCode = truncate(xmlField(doc, "Code"), 64)
		if err.RequestID == "" {
			err.RequestID = truncate(xmlField(doc, "RequestId"), 128)
		}
	}
	if o.Err == errClosed {
		err.Code = CodeInternalError
		err.Msg = "adapter is closed"
	}
	e.log.Debug("object request failed", "adapter", e.cfg.Name, "op", op, "code", err.Code.String(),
		"status", o.Status, "service_code", err.ServiceCode, "request_id", err.RequestID)
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// xmlField returns the text of the first <name>...</name> in doc, if it
// is short printable ASCII; "" otherwise.
func xmlField(doc []byte, name string) string {
	open := []byte("<" + name + ">")
	i := bytes.Index(doc, open)
	if i < 0 {
		return ""
	}
	rest := doc[i+len(open):]
	j := bytes.IndexByte(rest, '<')
	if j < 0 {
		return ""
	}
	for _, b := range rest[:j] {
		if b < 0x20 || b > 0x7e {
			return ""
		}
	}
	return string(rest[:j])
}

// getCall builds the ranged GET call for a request; size > 0 asks for
// the object's total size to be checked against it.
func (e *Executor) getCall(key, phys string, buf []byte, off, size int64) Call {
	return Call{Method: http.MethodGet, Key: phys, LogicalKey: key, Ranged: true, Off: off, Buf: buf, ObjectSize: size}
}

// GetBatch runs a batch of ranged GETs (see Store.GetBatch). Requests with
// an empty Buf succeed with 0 and invalid ones fail with INVALID_PARAMS;
// neither is sent. A request longer than SplitThreshold is split into
// parallel ranged GETs of SplitPartSize, each written into its own part of
// Buf; it succeeds when every part does and otherwise reports the first
// failing part's error. A WholeObject request checks the object's size on
// every part's reply.
func (e *Executor) GetBatch(ctx context.Context, reqs []GetRequest) []GetResult {
	res := make([]GetResult, len(reqs))
	if len(reqs) == 0 {
		return res
	}
	ncalls := 0
	for i := range reqs {
		r := &reqs[i]
		if err := CheckGetArgs("GET", r.Key, int64(len(r.Buf)), r.Off); err != nil {
			res[i].Err = err
			continue
		}
		if r.WholeObject && r.Off != 0 {
			res[i].Err = Errorf(CodeInvalidParams, "GET", r.Key, "whole-object read at offset %d, want 0", r.Off)
			continue
		}
		if len(r.Buf) == 0 {
			continue
		}
		ncalls += e.parts(len(r.Buf))
	}
	if ncalls == 0 {
		return res
	}
	calls := make([]Call, 0, ncalls)
	owner := make([]int32, 0, ncalls)
	for i := range reqs {
		r := &reqs[i]
		if res[i].Err != nil || len(r.Buf) == 0 {
			continue
		}
		phys, err := e.cfg.Keys.Physical(r.Key)
		if err != nil {
			res[i].Err = withOp(err, "GET")
			continue
		}
		var size int64
		if r.WholeObject {
			size = int64(len(r.Buf))
		}
		if n := e.parts(len(r.Buf)); n == 1 {
			calls = append(calls, e.getCall(r.Key, phys, r.Buf, r.Off, size))
			owner = append(owner, int32(i))
		} else {
			ps := int(e.cfg.SplitPartSize)
			for p := 0; p < n; p++ {
				lo := p * ps
				hi := min(lo+ps, len(r.Buf))
				calls = append(calls, e.getCall(r.Key, phys, r.Buf[lo:hi:hi], r.Off+int64(lo), size))
				owner = append(owner, int32(i))
			}
		}
	}
	out := make([]Outcome, len(calls))
	e.Run(ctx, calls, out)
	for k := range calls {
		i := owner[k]
		if res[i].Err != nil {
			continue
		}
		if err := e.MapGet(&calls[k], &out[k]); err != nil {
			res[i] = GetResult{Err: err}
			continue
		}
		res[i].N += out[k].N
	}
	return res
}

// parts returns how many ranged GETs serve n bytes.
func (e *Executor) parts(n int) int {
	if e.cfg.SplitThreshold <= 0 || int64(n) <= e.cfg.SplitThreshold {
		return 1
	}
	ps := e.cfg.SplitPartSize
	return int((int64(n) + ps - 1) / ps)
}

func withOp(err error, op string) error {
	if e, ok := err.(*Error); ok && e.Op == "" {
		e.Op = op
	}
	return err
}

// GetRange reads len(buf) bytes of key at off into buf (see Store.GetRange).
func (e *Executor) GetRange(ctx context.Context, key string, buf []byte, off int64) (int, error) {
	if err := CheckGetArgs("GET", key, int64(len(buf)), off); err != nil {
		return 0, err
	}
	if len(buf) == 0 {
		return 0, nil
	}
	r := e.GetBatch(ctx, []GetRequest{{Key: key, Buf: buf, Off: off}})
	return r[0].N, r[0].Err
}

// GetV reads the bytes of key at off into the concatenation of bufs and
// returns their total. Several slices are filled through one temporary
// buffer and then scattered; a single slice is read in place.
func (e *Executor) GetV(ctx context.Context, key string, bufs [][]byte, off int64) (int, error) {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if err := CheckGetArgs("GET", key, int64(total), off); err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, nil
	}
	var nonEmpty [][]byte
	for _, b := range bufs {
		if len(b) > 0 {
			nonEmpty = append(nonEmpty, b)
		}
	}
	if len(nonEmpty) == 1 {
		return e.GetRange(ctx, key, nonEmpty[0], off)
	}
	tmp := make([]byte, total)
	if _, err := e.GetRange(ctx, key, tmp, off); err != nil {
		return 0, err
	}
	p := tmp
	for _, b := range nonEmpty {
		p = p[copy(b, p):]
	}
	return total, nil
}

// PutBatch runs a batch of PUTs (see Store.PutBatch). Each body streams
// from the request's slices. With a Multipart protocol configured, bodies
// longer than MultipartThreshold go through a multipart upload instead.
func (e *Executor) PutBatch(ctx context.Context, reqs []PutRequest) []error {
	res := make([]error, len(reqs))
	if len(reqs) == 0 {
		return res
	}
	calls := make([]Call, 0, len(reqs))
	owner := make([]int32, 0, len(reqs))
	var multi []int
	for i := range reqs {
		r := &reqs[i]
		phys, err := e.cfg.Keys.Physical(r.Key)
		if err != nil {
			res[i] = withOp(err, "PUT")
			continue
		}
		c := Call{Method: http.MethodPut, Key: phys, LogicalKey: r.Key, Body: r.Bufs}
		if e.cfg.Multipart != nil && e.cfg.MultipartThreshold > 0 && c.BodyLen() > e.cfg.MultipartThreshold {
			multi = append(multi, i)
			continue
		}
		calls = append(calls, c)
		owner = append(owner, int32(i))
	}
	if len(calls) > 0 {
		out := make([]Outcome, len(calls))
		e.Run(ctx, calls, out)
		for k := range calls {
			res[owner[k]] = e.MapPut(&calls[k], &out[k])
		}
	}
	for _, i := range multi {
		res[i] = e.putMultipart(ctx, &reqs[i])
	}
	return res
}

// PutV stores the concatenation of bufs as key.
func (e *Executor) PutV(ctx context.Context, key string, bufs [][]byte) error {
	return e.PutBatch(ctx, []PutRequest{{Key: key, Bufs: bufs}})[0]
}

// Head returns the size of key from the final response's Content-Length:
// 404 is FILE_NOT_FOUND, another non-2xx status or a missing length
// FILE_READ_FAIL, a transport error DFS_SERVICE_UNAVAILABLE.
func (e *Executor) Head(ctx context.Context, key string) (int64, error) {
	phys, err := e.cfg.Keys.Physical(key)
	if err != nil {
		return 0, withOp(err, "HEAD")
	}
	c := Call{Method: http.MethodHead, Key: phys, LogicalKey: key}
	o := e.Do(ctx, &c)
	switch {
	case o.Err != nil:
		return 0, e.fail(CodeDFSServiceUnavailable, "HEAD", &c, &o, "transfer failed")
	case o.Status == http.StatusNotFound:
		return 0, e.fail(CodeFileNotFound, "HEAD", &c, &o, "object not found")
	case o.Status/100 != 2:
		return 0, e.fail(CodeFileReadFail, "HEAD", &c, &o, "unexpected status")
	}
	v := o.Header.Get("Content-Length")
	n, perr := strconv.ParseInt(v, 10, 64)
	if v == "" || perr != nil || n < 0 {
		return 0, e.fail(CodeFileReadFail, "HEAD", &c, &o, "missing or invalid Content-Length")
	}
	return n, nil
}

// Exists reports whether key exists: 2xx true, 404 false, another status
// FILE_READ_FAIL.
func (e *Executor) Exists(ctx context.Context, key string) (bool, error) {
	phys, err := e.cfg.Keys.Physical(key)
	if err != nil {
		return false, withOp(err, "HEAD")
	}
	c := Call{Method: http.MethodHead, Key: phys, LogicalKey: key}
	o := e.Do(ctx, &c)
	switch {
	case o.Err != nil:
		return false, e.fail(CodeDFSServiceUnavailable, "HEAD", &c, &o, "transfer failed")
	case o.Status == http.StatusNotFound:
		return false, nil
	case o.Status/100 == 2:
		return true, nil
	}
	return false, e.fail(CodeFileReadFail, "HEAD", &c, &o, "unexpected status")
}

// Delete removes key: 2xx and 404 are success, another status
// FILE_WRITE_FAIL, a transport error DFS_SERVICE_UNAVAILABLE.
func (e *Executor) Delete(ctx context.Context, key string) error {
	phys, err := e.cfg.Keys.Physical(key)
	if err != nil {
		return withOp(err, "DELETE")
	}
	c := Call{Method: http.MethodDelete, Key: phys, LogicalKey: key}
	o := e.Do(ctx, &c)
	switch {
	case o.Err != nil:
		return e.fail(CodeDFSServiceUnavailable, "DELETE", &c, &o, "transfer failed")
	case o.Status/100 == 2 || o.Status == http.StatusNotFound:
		return nil
	}
	return e.fail(CodeFileWriteFail, "DELETE", &c, &o, "unexpected status")
}
