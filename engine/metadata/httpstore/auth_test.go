package httpstore

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/engine/metadata"
)

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// With a token set, only requests carrying it are served; a refused
// client's error says which variable to set and never shows a token.
func TestServerToken(t *testing.T) {
	const token = "s3cret-token"
	url := serve(t, NewServerWith(ServerOptions{Token: token}))
	good := open(t, url, Options{Token: token})
	if err := good.Put(tctx(t), "mooncake/ram/a", []byte(`{"a":1}`)); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	if v, err := good.Get(tctx(t), "mooncake/ram/a"); err != nil || string(v) != `{"a":1}` {
		t.Fatalf("Get with the token: %q %v", v, err)
	}
	for _, tok := range []string{"", "wrong-token-value"} {
		_, err := open(t, url, Options{Token: tok}).Get(tctx(t), "mooncake/ram/a")
		if !errors.Is(err, metadata.ErrStore) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "MC_METADATA_HTTP_TOKEN") {
			t.Fatalf("token %q: %v", tok, err)
		}
		if strings.Contains(err.Error(), token) || (tok != "" && strings.Contains(err.Error(), tok)) {
			t.Fatalf("error shows a token: %v", err)
		}
		if err := open(t, url, Options{Token: tok}).Put(tctx(t), "mooncake/ram/a", []byte("{}")); !errors.Is(err, metadata.ErrStore) {
			t.Fatalf("Put with token %q: %v", tok, err)
		}
	}
	if v, _ := good.Get(tctx(t), "mooncake/ram/a"); string(v) != `{"a":1}` {
		t.Fatalf("an unauthorized Put changed the value: %q", v)
	}
}

// The key and byte budgets refuse growth with 507 and still allow
// rewrites and deletes; an rpc_meta key only takes its own value again.
func TestServerLimitsAndRPCMetaRule(t *testing.T) {
	s := open(t, serve(t, NewServerWith(ServerOptions{MaxKeys: 2, MaxTotalBytes: 10})), Options{})
	if err := s.Put(tctx(t), "k1", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(tctx(t), "k2", []byte("123")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(tctx(t), "k3", []byte("1")); err == nil || !strings.Contains(err.Error(), "507") {
		t.Fatalf("a third key: %v", err)
	}
	if err := s.Put(tctx(t), "k2", []byte("123456")); err == nil || !strings.Contains(err.Error(), "507") {
		t.Fatalf("a rewrite beyond the byte budget: %v", err)
	}
	if err := s.Put(tctx(t), "k2", []byte("12345")); err != nil {
		t.Fatalf("a rewrite within the budget: %v", err)
	}
	if err := s.Delete(tctx(t), "k1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(tctx(t), "mooncake/rpc_meta/n", []byte("a")); err != nil {
		t.Fatalf("a key after a delete freed room: %v", err)
	}
	if err := s.Put(tctx(t), "mooncake/rpc_meta/n", []byte("a")); err != nil {
		t.Fatalf("rpc_meta with the same value: %v", err)
	}
	if err := s.Put(tctx(t), "mooncake/rpc_meta/n", []byte("b")); err == nil || !strings.Contains(err.Error(), "Duplicate rpc_meta") {
		t.Fatalf("rpc_meta with another value: %v", err)
	}
	if err := s.Delete(tctx(t), "mooncake/rpc_meta/n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(tctx(t), "mooncake/rpc_meta/n", []byte("b")); err != nil {
		t.Fatalf("rpc_meta after its delete: %v", err)
	}
}

// FuzzEscape checks that every key survives the query escaping the
// server decodes, and that escaped keys hold only unreserved bytes and
// %XX triplets.
func FuzzEscape(f *testing.F) {
	for _, k := range []string{"mooncake/ram/10.0.0.1:15001", "a b&c=d?e%f+g#h", "節點", "\x00\xff"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		e := string(appendEscaped(nil, k))
		for i := 0; i < len(e); i++ {
			c := e[i]
			unreserved := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0
			if c == '%' {
				i += 2
				continue
			}
			if !unreserved {
				t.Fatalf("%q escapes to %q with a raw %q", k, e, c)
			}
		}
		got, err := url.QueryUnescape(e)
		if err != nil || got != k {
			t.Fatalf("%q -> %q -> %q, %v", k, e, got, err)
		}
	})
}
