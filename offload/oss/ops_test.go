package oss

import (
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
	. "github.com/ferrylabs/ferry/offload/objstore/objtest"
)

// TestHeadAndDeleteStatusMapping covers Exists, GetSize and Delete for
// every status class, and that an empty read sends nothing.
func TestHeadAndDeleteStatusMapping(t *testing.T) {
	srv, a := newFault(t, 8)
	srv.Route("present", Reply(200, "", "X-Ignored: 1"))
	srv.Route("absent", Reply(404, ""))
	srv.Route("denied", Reply(403, ""))
	srv.Route("broken", Reset())
	srv.Route("sized", Raw("HTTP/1.1 200 OK\r\nContent-Length: 42\r\nConnection: close\r\n\r\n"))

	for key, want := range map[string]struct {
		ok   bool
		code objstore.Code
	}{"present": {true, objstore.CodeOK}, "absent": {false, objstore.CodeOK},
		"denied": {false, objstore.CodeFileReadFail}, "broken": {false, objstore.CodeDFSServiceUnavailable}} {
		ok, err := a.Exists(ctx, key)
		wantCode(t, "Exists "+key, err, want.code)
		if ok != want.ok {
			t.Errorf("Exists %s = %t", key, ok)
		}
	}
	if n, err := a.GetSize(ctx, "sized"); err != nil || n != 42 {
		t.Fatalf("GetSize = %d, %v", n, err)
	}
	for key, want := range map[string]objstore.Code{"absent": objstore.CodeFileNotFound,
		"denied": objstore.CodeFileReadFail, "broken": objstore.CodeDFSServiceUnavailable} {
		_, err := a.GetSize(ctx, key)
		wantCode(t, "GetSize "+key, err, want)
	}
	for key, want := range map[string]objstore.Code{"present": objstore.CodeOK, "absent": objstore.CodeOK,
		"denied": objstore.CodeFileWriteFail, "broken": objstore.CodeDFSServiceUnavailable} {
		wantCode(t, "Delete "+key, a.Delete(ctx, key), want)
	}
	before := len(srv.Requests())
	if n, err := a.Get(ctx, "present", nil); n != 0 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := a.GetV(ctx, "present", [][]byte{nil, {}}, 3); n != 0 || err != nil {
		t.Fatal(n, err)
	}
	if len(srv.Requests()) != before {
		t.Fatal("an empty read went on the wire")
	}
	for _, r := range srv.Requests() {
		if r.Method == "HEAD" && !hasHeader(r.Wire, "x-oss-date: "+r.Header.Get("X-Oss-Date")) {
			t.Errorf("HEAD without x-oss-date")
		}
	}
}
