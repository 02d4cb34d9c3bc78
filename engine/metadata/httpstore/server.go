package httpstore

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
//     cannot be read gets 400 "invalid request"; an existing rpc_meta key
//     rewritten with another value gets 400; a new key beyond MaxKeys or
//     a value beyond MaxTotalBytes gets 507.
//   - Any request without the configured bearer token gets 401.
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
	total   int64             // bytes of all values
	maxBody int64
	opts    ServerOptions
}

// ServerOptions are the limits and the token of a Server, as Mooncake's
// reference server reads them from the environment.
type ServerOptions struct {
	// Token, when set, is required of every request as
	// "Authorization: Bearer <Token>"; others get 401
	// (MC_METADATA_HTTP_TOKEN).
	Token string
	// MaxKeys caps the number of keys; a PUT of a new key beyond it gets
	// 507 (MC_METADATA_MAX_KEYS, default 65536).
	MaxKeys int
	// MaxTotalBytes caps the bytes of all values; a PUT that would go
	// beyond it gets 507 (MC_METADATA_MAX_TOTAL_BYTES, default 1 GiB).
	MaxTotalBytes int64
}

// Defaults of ServerOptions.
const (
	DefaultMaxKeys       = 65536
	DefaultMaxTotalBytes = 1 << 30
)

// NewServer returns an empty server with the default limits and no
// token.
func NewServer() *Server { return NewServerWith(ServerOptions{}) }

// NewServerWith returns an empty server with opts (zero limits take the
// defaults).
func NewServerWith(opts ServerOptions) *Server {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = DefaultMaxTotalBytes
	}
	return &Server{values: make(map[string][]byte), maxBody: MaxValueSize, opts: opts}
}

// authorized checks the bearer token in constant time.
func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	scheme, presented, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") || presented == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(presented), []byte(s.opts.Token)) == 1
}

// Len is the number of keys the server holds.
func (s *Server) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// ServeHTTP answers one request of the protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		reply(w, http.StatusUnauthorized, "unauthorized")
		return
	}
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
		status, msg := s.put(key, v)
		reply(w, status, msg)
	case http.MethodDelete:
		s.mu.Lock()
		s.total -= int64(len(s.values[key]))
		delete(s.values, key)
		s.mu.Unlock()
		reply(w, http.StatusOK, "metadata deleted")
	}
}

// put stores v under key within the limits. As in Mooncake's servers, an
// rpc_meta key that exists may only be rewritten with the same value:
// two engines cannot publish one name (the owner of a stale entry
// deletes it first).
func (s *Server) put(key string, v []byte) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.values[key]
	if exists && strings.Contains(key, "rpc_meta") {
		if bytes.Equal(old, v) {
			return http.StatusOK, "metadata unchanged"
		}
		return http.StatusBadRequest, "Duplicate rpc_meta key not allowed"
	}
	if !exists && len(s.values) >= s.opts.MaxKeys {
		return http.StatusInsufficientStorage, "metadata key budget exhausted"
	}
	total := s.total - int64(len(old)) + int64(len(v))
	if total > s.opts.MaxTotalBytes {
		return http.StatusInsufficientStorage, "metadata size budget exhausted"
	}
	s.values[key] = v
	s.total = total
	return http.StatusOK, "metadata updated"
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
