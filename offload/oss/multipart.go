package oss

import (
	"context"
	"net/http"
	"strconv"

	"github.com/ferrylabs/ferry/offload/objstore"
)

// multipart is the OSS multipart-upload protocol (InitiateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload).
type multipart struct{ r *running }

func (m multipart) Create(ctx context.Context, e *objstore.Executor, key string) (string, error) {
	c := objstore.Call{Method: http.MethodPost, Key: key, Query: "uploads", ReadAll: true}
	o := e.Do(ctx, &c)
	if err := e.MapPut(&c, &o); err != nil {
		return "", err
	}
	id := objstore.ParseUploadID(o.Body)
	if id == "" {
		return "", objstore.Errorf(objstore.CodeFileWriteFail, "PUT", "", "InitiateMultipartUpload reply has no UploadId")
	}
	return id, nil
}

func (m multipart) PartQuery(uploadID string, part int) string {
	return objstore.CanonicalQuery([]objstore.QueryParam{
		{Name: "partNumber", Value: strconv.Itoa(part)}, {Name: "uploadId", Value: uploadID}}, false)
}

func (m multipart) Complete(ctx context.Context, e *objstore.Executor, key, uploadID string, etags []string) error {
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "uploadId", Value: uploadID}}, false)
	body := objstore.CompleteMultipartBody(etags)
	c := objstore.Call{Method: http.MethodPost, Key: key, Query: q, Body: [][]byte{body}, ReadAll: true}
	o := e.Do(ctx, &c)
	return e.MapPut(&c, &o)
}

func (m multipart) Abort(ctx context.Context, e *objstore.Executor, key, uploadID string) error {
	q := objstore.CanonicalQuery([]objstore.QueryParam{{Name: "uploadId", Value: uploadID}}, false)
	c := objstore.Call{Method: http.MethodDelete, Key: key, Query: q}
	o := e.Do(ctx, &c)
	if o.Err == nil && (o.Status/100 == 2 || o.Status == http.StatusNotFound) {
		return nil
	}
	return e.MapPut(&c, &o)
}
