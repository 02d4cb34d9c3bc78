package s3

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// multipart is the S3 multipart-upload protocol (CreateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload) for the
// objstore Executor, which splits and uploads the parts.
type multipart struct{}

func (multipart) Create(ctx context.Context, e *objstore.Executor, key string) (string, error) {
	c := objstore.Call{Method: http.MethodPost, Key: key, Query: "uploads=", ReadAll: true}
	o := e.Do(ctx, &c)
	if err := e.MapPut(&c, &o); err != nil {
		return "", err
	}
	id := objstore.ParseUploadID(o.Body)
	if id == "" {
		return "", &objstore.Error{Code: objstore.CodeFileWriteFail, Op: "PUT", Status: o.Status,
			Msg: "CreateMultipartUpload reply has no UploadId"}
	}
	return id, nil
}

func (multipart) PartQuery(uploadID string, part int) string {
	return objstore.CanonicalQuery([]objstore.QueryParam{
		{Name: "partNumber", Value: strconv.Itoa(part)}, {Name: "uploadId", Value: uploadID}}, true)
}

func (multipart) Complete(ctx context.Context, e *objstore.Executor, key, uploadID string, etags []string) error {
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "uploadId", Value: uploadID}}, true)
	body := objstore.CompleteMultipartBody(etags)
	c := objstore.Call{Method: http.MethodPost, Key: key, Query: q, Body: [][]byte{body}, ReadAll: true}
	o := e.Do(ctx, &c)
	if err := e.MapPut(&c, &o); err != nil {
		return err
	}
	// S3 may answer 200 and still report a failure in the body.
	if bytes.Contains(o.Body, []byte("<Error>")) {
		return &objstore.Error{Code: objstore.CodeFileWriteFail, Op: "PUT", Status: o.Status,
			Msg: "CompleteMultipartUpload failed"}
	}
	return nil
}

func (multipart) Abort(ctx context.Context, e *objstore.Executor, key, uploadID string) error {
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "uploadId", Value: uploadID}}, true)
	c := objstore.Call{Method: http.MethodDelete, Key: key, Query: q}
	o := e.Do(ctx, &c)
	if o.Err != nil {
		return &objstore.Error{Code: objstore.CodeDFSServiceUnavailable, Op: "DELETE", Msg: "abort multipart upload", Err: o.Err}
	}
	if o.Status/100 != 2 && o.Status != http.StatusNotFound {
		return &objstore.Error{Code: objstore.CodeFileWriteFail, Op: "DELETE", Status: o.Status, Msg: "abort multipart upload"}
	}
	return nil
}
