package objtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, c *http.Client, url string) (*http.Response, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestServerActions(t *testing.T) {
	s := NewServer(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	s.Route("reply", Reply(206, "hello", "X-Extra: 1"), Reply(404, "gone"))
	s.Route("raw", Raw("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	s.Route("reset", Reset())
	s.Route("gated", Gate(Reply(200, "late")))
	if r, b, err := get(t, c, s.URL()+"/b/p/reply?x=1"); err != nil || r.StatusCode != 206 || b != "hello" || r.Header.Get("X-Extra") != "1" {
		t.Fatal(r, b, err)
	}
	if r, b, _ := get(t, c, s.URL()+"/b/reply"); r.StatusCode != 404 || b != "gone" {
		t.Fatal(r.StatusCode, b)
	}
	if _, b, err := get(t, c, s.URL()+"/raw"); err != nil || b != "ok" {
		t.Fatal(b, err)
	}
	if _, _, err := get(t, c, s.URL()+"/reset"); err == nil {
		t.Fatal("reset gave a response")
	}
	done := make(chan string)
	go func() { _, b, _ := get(t, c, s.URL()+"/gated"); done <- b }()
	if !s.WaitForRequest("gated", 0) {
		t.Fatal("gated request not seen")
	}
	select {
	case <-done:
		t.Fatal("gated reply was not held")
	case <-time.After(50 * time.Millisecond):
	}
	s.ReleaseResponses()
	if b := <-done; b != "late" {
		t.Fatal(b)
	}
	if s.Count("reply") != 2 || !strings.HasPrefix(s.Requests()[0].Wire, "GET /b/p/reply?x=1 HTTP/1.1\r\n") {
		t.Fatal(s.Requests()[0].Wire)
	}
	if _, _, err := get(t, c, s.URL()+"/unknown"); err != nil {
		t.Fatal(err)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "unknown route") {
		t.Fatal(errs)
	}
}

func TestScriptKeepAliveAndStallEndOnClose(t *testing.T) {
	s := NewServer(t)
	s.Script(KeepAlive(Reply(200, "a")), KeepAlive(Reply(200, "b")), Stall())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for _, want := range []string{"a", "b"} {
		if _, b, err := get(t, c, s.URL()+"/any"); err != nil || b != want {
			t.Fatal(b, err)
		}
	}
	r := s.Requests()
	if r[0].Conn != r[1].Conn {
		t.Fatal("keep-alive connection not reused")
	}
	errc := make(chan error)
	go func() { _, _, err := get(t, c, s.URL()+"/stall"); errc <- err }()
	s.WaitForRequests(3, 5*time.Second)
	s.Close()
	if err := <-errc; err == nil {
		t.Fatal("stalled request got a reply")
	}
}

func TestMemBucket(t *testing.T) {
	b := &MemBucket{Bucket: "bk", PageSize: 1}
	srv := httptest.NewServer(b)
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	req, _ := http.NewRequest("PUT", srv.URL+"/bk/a%2520b", strings.NewReader("0123456789"))
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if _, ok := b.Objects()["a%20b"]; !ok {
		t.Fatal(b.Objects())
	}
	req, _ = http.NewRequest("GET", srv.URL+"/bk/a%2520b", nil)
	req.Header.Set("Range", "bytes=8-20")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || string(body) != "89" || resp.Header.Get("Content-Range") != "bytes 8-9/10" {
		t.Fatal(resp.StatusCode, string(body))
	}
	if r, doc, _ := get(t, c, srv.URL+"/bk/?list-type=2&encoding-type=url&prefix="); r.StatusCode != 200 || !strings.Contains(doc, "<Key>a%2520b</Key>") {
		t.Fatal(doc)
	}
}
