package objstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// ObjectOps checks arguments before it asks Exec, and returns Exec's
// error unchanged from every method.
func TestObjectOpsChecksBeforeExec(t *testing.T) {
	refused := objstore.Errorf(objstore.CodeInternalError, "X", "", "not running")
	var asked []string
	ops := objstore.ObjectOps{Exec: func(op, key string) (*objstore.Executor, error) {
		asked = append(asked, op+" "+key)
		return nil, refused
	}}
	ctx := context.Background()
	if _, err := ops.GetRange(ctx, "k", make([]byte, 4), -1); !errors.Is(err, objstore.ErrInvalidParams) {
		t.Fatalf("negative offset: %v", err)
	}
	if n, err := ops.GetV(ctx, "k", [][]byte{nil, {}}, 0); n != 0 || err != nil {
		t.Fatalf("empty GetV = %d, %v", n, err)
	}
	if n, err := ops.Get(ctx, "k", nil); n != 0 || err != nil {
		t.Fatalf("empty Get = %d, %v", n, err)
	}
	if len(asked) != 0 {
		t.Fatalf("Exec asked for rejected or empty reads: %v", asked)
	}
	errs := []error{ops.Put(ctx, "a", []byte("x"))}
	_, err := ops.Get(ctx, "b", make([]byte, 1))
	errs = append(errs, err)
	_, err = ops.GetV(ctx, "c", [][]byte{make([]byte, 1)}, 0)
	errs = append(errs, err)
	_, err = ops.Exists(ctx, "d")
	errs = append(errs, err)
	_, err = ops.GetSize(ctx, "e")
	errs = append(errs, err)
	errs = append(errs, ops.Delete(ctx, "f"))
	_, err = ops.ListKeys(ctx)
	errs = append(errs, err)
	for i, err := range errs {
		if err != refused {
			t.Errorf("call %d returned %v, want Exec's error", i, err)
		}
	}
	want := "PUT a|GET b|GET c|HEAD d|HEAD e|DELETE f|LIST "
	if got := strings.Join(asked, "|"); got != want {
		t.Fatalf("Exec asked %q, want %q", got, want)
	}
}

func TestMultipartDocuments(t *testing.T) {
	body := string(objstore.CompleteMultipartBody([]string{`"e1"`, "a<b"}))
	want := "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&#34;e1&#34;</ETag></Part>" +
		"<Part><PartNumber>2</PartNumber><ETag>a&lt;b</ETag></Part></CompleteMultipartUpload>"
	if body != want {
		t.Fatalf("body\n%s\nwant\n%s", body, want)
	}
	if id := objstore.ParseUploadID([]byte(`<InitiateMultipartUploadResult><Bucket>b</Bucket><UploadId>u-1</UploadId></InitiateMultipartUploadResult>`)); id != "u-1" {
		t.Fatalf("upload id %q", id)
	}
	for _, bad := range []string{"", "<x>", "<R><Bucket>b</Bucket></R>"} {
		if id := objstore.ParseUploadID([]byte(bad)); id != "" {
			t.Errorf("%q: upload id %q", bad, id)
		}
	}
}
