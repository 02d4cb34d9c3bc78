package objstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Code is a Mooncake ErrorCode value. Its numbers mirror Mooncake's types.h
// so logs and RPC replies can be compared with a C++ node.
type Code int

// The error codes an adapter returns.
const (
	CodeOK                    Code = 0
	CodeInternalError         Code = -1
	CodeInvalidParams         Code = -600
	CodeNotSupported          Code = -1012
	CodeFileNotFound          Code = -1100
	CodeFileReadFail          Code = -1102
	CodeFileWriteFail         Code = -1103
	CodeDFSServiceUnavailable Code = -1601
)

// String returns Mooncake's name for c, or "ErrorCode(<n>)".
func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeInternalError:
		return "INTERNAL_ERROR"
	case CodeInvalidParams:
		return "INVALID_PARAMS"
	case CodeNotSupported:
		return "NOT_SUPPORTED"
	case CodeFileNotFound:
		return "FILE_NOT_FOUND"
	case CodeFileReadFail:
		return "FILE_READ_FAIL"
	case CodeFileWriteFail:
		return "FILE_WRITE_FAIL"
	case CodeDFSServiceUnavailable:
		return "DFS_SERVICE_UNAVAILABLE"
	}
	return "ErrorCode(" + strconv.Itoa(int(c)) + ")"
}

// Sentinel errors, one per Code. Every error an adapter returns matches
// exactly one of them with errors.Is.
var (
	// ErrInternal: the adapter was used before a successful Init, or an
	// internal invariant broke (for example a result count mismatch).
	ErrInternal = errors.New("INTERNAL_ERROR")
	// ErrInvalidParams: the caller's arguments or the configuration were
	// rejected locally; nothing was sent.
	ErrInvalidParams = errors.New("INVALID_PARAMS")
	// ErrNotSupported: the adapter does not implement the operation.
	ErrNotSupported = errors.New("NOT_SUPPORTED")
	// ErrNotFound: the object does not exist (HTTP 404).
	ErrNotFound = errors.New("FILE_NOT_FOUND")
	// ErrReadFail: the service answered a read (GET, HEAD, LIST) with an
	// unexpected status, length or document. The request was delivered.
	ErrReadFail = errors.New("FILE_READ_FAIL")
	// ErrWriteFail: the service answered a PUT or DELETE with a non-2xx status.
	ErrWriteFail = errors.New("FILE_WRITE_FAIL")
	// ErrUnavailable: the exchange failed in transport (refused, reset,
	// timeout, truncated or overlong body, malformed response), so the
	// outcome on the service side is unknown.
	ErrUnavailable = errors.New("DFS_SERVICE_UNAVAILABLE")
)

// ErrObjectSize is the cause (Error.Err) of the INVALID_PARAMS error a
// whole-object read (GetRequest.WholeObject) fails with when the stored
// object's size differs from the expected one. It is not a code sentinel:
// such an error matches both ErrInvalidParams and ErrObjectSize.
var ErrObjectSize = errors.New("stored object size differs from the expected size")

// Sentinel returns the sentinel error for c (nil for CodeOK, ErrInternal
// for an unknown code).
func (c Code) Sentinel() error {
	switch c {
	case CodeOK:
		return nil
	case CodeInvalidParams:
		return ErrInvalidParams
	case CodeNotSupported:
		return ErrNotSupported
	case CodeFileNotFound:
		return ErrNotFound
	case CodeFileReadFail:
		return ErrReadFail
	case CodeFileWriteFail:
		return ErrWriteFail
	case CodeDFSServiceUnavailable:
		return ErrUnavailable
	}
	return ErrInternal
}

// Error is the error type adapters return. It carries the Mooncake code,
// the HTTP status and the service's error code and request id when a
// response arrived. It never holds a credential: Msg and Err are built from
// statuses, keys and transport errors only.
type Error struct {
	Code        Code   // Mooncake code; errors.Is(err, Code.Sentinel()) holds
	Op          string // "GET", "PUT", "HEAD", "DELETE", "LIST", "INIT", ...
	Key         string // logical key, "" for bucket-level operations
	Status      int    // HTTP status, 0 when no response arrived
	ServiceCode string // service error code such as "NoSuchKey", if parsed
	RequestID   string // service request id, if the response carried one
	Msg         string // what was wrong, for people
	Err         error  // underlying cause (transport error, ErrObjectSize), may be nil
}

// Error formats the error on one line. Keys are quoted with %q so control
// bytes stay visible.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("objstore: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "%q ", e.Key)
	}
	b.WriteString(e.Code.String())
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d", e.Status)
		if e.ServiceCode != "" {
			b.WriteString(" ")
			b.WriteString(e.ServiceCode)
		}
		if e.RequestID != "" {
			b.WriteString(" request-id ")
			b.WriteString(e.RequestID)
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the code's sentinel and the underlying cause.
func (e *Error) Unwrap() []error {
	s := e.Code.Sentinel()
	if e.Err == nil {
		return []error{s}
	}
	return []error{s, e.Err}
}

// Errorf builds an *Error with a formatted message and no HTTP details.
func Errorf(code Code, op, key, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code carried by err: CodeOK for nil, the Code of an
// *Error or of a matching sentinel, and CodeInternalError otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	for _, c := range []Code{CodeInvalidParams, CodeNotSupported, CodeFileNotFound,
		CodeFileReadFail, CodeFileWriteFail, CodeDFSServiceUnavailable} {
		if errors.Is(err, c.Sentinel()) {
			return c
		}
	}
	return CodeInternalError
}
