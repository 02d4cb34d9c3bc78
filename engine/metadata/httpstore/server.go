package httpstore

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// jsonContentType is the content type of every answer, as Mooncake's
// reference server sends it (its plain-text messages included).
const jsonContentType = "application/json; charset=utf-8"

// Server is an in-memory Mooncake-compatible HTTP metadata server, the
// protocol of Mooncake's example/http-metadata-server, as an
// http.Handler to mount at the metadata path (e.g. "/metadata"); it does
// not look at the request path itself. It answers:
//
//   - GET ?key=K: 200 and the stored value, or 404 "metadata not found".
//   - PUT ?key=K: stores the body; 200 "metadata updated". A body over
//     MaxValueSize gets 413 and the key keeps its old value; a body that
//     cannot be read gets 400 "invalid request".
//   - DELETE ?key=K: removes K; 200 "metadata deleted", whether or not
//     K was there (Mooncake's client takes only 200 as success).
//   - A missing or empty key parameter gets 400 (Mooncake's server would
//     treat it as the empty key; no Mooncake client sends one), and any
//     other method 405 with an Allow header.
//
// Keys are matched byte for byte after query decoding. A Server is safe
// for concurrent use; the zero Server is not ready, use NewServer.
type Server struct {
	mu      sync.RWMutex
	values  map[string][]byte // never mutated after insertion
	maxBody int64
}

// NewServer returns an empty server.
func NewServer() *Server {
	return &Server{values: make(map[string][]byte), maxBody: MaxValueSize}
}

// Len is the number of keys the server holds.
func (s *Server) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// ServeHTTP answers one request of the protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, PUT, DELETE")
		reply(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	key, err := queryKey(r)
	if err != nil {
		reply(w, http.StatusBadRequest, "invalid query: "+err.Error())
		return
	}
	if key == "" {
		reply(w, http.StatusBadRequest, "missing key parameter")
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.mu.RLock()
		v, ok := s.values[key]
		s.mu.RUnlock()
		if !ok {
			reply(w, http.StatusNotFound, "metadata not found")
			return
		}
		w.Header().Set("Content-Type", jsonContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(v)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(v)
	case http.MethodPut:
		v, status := s.readBody(w, r)
		if status != http.StatusOK {
			if status == http.StatusRequestEntityTooLarge {
				reply(w, status, "metadata value larger than "+strconv.FormatInt(s.maxBody, 10)+" bytes")
			} else {
				reply(w, status, "invalid request")
			}
			return
		}
		s.mu.Lock()
		s.values[key] = v
		s.mu.Unlock()
		reply(w, http.StatusOK, "metadata updated")
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.values, key)
		s.mu.Unlock()
		reply(w, http.StatusOK, "metadata deleted")
	}
}

// queryKey returns the decoded "key" parameter. A query that does not
// decode is an error rather than a silently dropped pair.
func queryKey(r *http.Request) (string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", err
	}
	return q.Get("key"), nil
}

// readBody reads a PUT body of at most s.maxBody bytes, answering the
// status to send when it cannot.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int) {
	if r.ContentLength > s.maxBody {
		return nil, http.StatusRequestEntityTooLarge
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusBadRequest
	}
	return buf.Bytes(), http.StatusOK
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg))
}
