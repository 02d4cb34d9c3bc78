package objstore

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestURIEncode(t *testing.T) {
	cases := []struct{ in, slash, noslash string }{
		{"a/b c", "a/b%20c", "a%2Fb%20c"},
		{"100%+x", "100%25%2Bx", "100%25%2Bx"},
		{"tenant\x00/file%one", "tenant%00/file%25one", "tenant%00%2Ffile%25one"},
		{"你", "%E4%BD%A0", "%E4%BD%A0"},
		{"AZaz09-_.~", "AZaz09-_.~", "AZaz09-_.~"},
	}
	for _, c := range cases {
		if got := URIEncode(c.in, true); got != c.slash {
			t.Errorf("URIEncode(%q, true) = %q, want %q", c.in, got, c.slash)
		}
		if got := URIEncode(c.in, false); got != c.noslash {
			t.Errorf("URIEncode(%q, false) = %q, want %q", c.in, got, c.noslash)
		}
		if got := URIDecode(c.noslash); got != c.in {
			t.Errorf("URIDecode(%q) = %q", c.noslash, got)
		}
	}
	for in, want := range map[string]string{"%": "%", "%4": "%4", "%zz": "%zz", "a+b": "a+b", "%2f%2F": "//", "%%41": "%A"} {
		if got := URIDecode(in); got != want {
			t.Errorf("URIDecode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeysMapping(t *testing.T) {
	for prefix, want := range map[string]string{"": "", "///": "", "/mooncake/": "mooncake/", "/a/../b//": "a/../b/"} {
		if got := NewKeys(prefix, 0).PhysicalPrefix(); got != want {
			t.Errorf("prefix %q -> %q, want %q", prefix, got, want)
		}
	}
	k := NewKeys("/mooncake", 30)
	p, err := k.Physical("a/b c")
	if err != nil || p != "mooncake/a%2Fb%20c" {
		t.Fatal(p, err)
	}
	if l, err := k.Logical(p); err != nil || l != "a/b c" {
		t.Fatal(l, err)
	}
	if _, err := k.Logical("other/x"); !errors.Is(err, ErrReadFail) {
		t.Fatal(err)
	}
	if _, err := k.Physical("0123456789012345678901234567890"); !errors.Is(err, ErrInvalidParams) {
		t.Fatal(err)
	}
}

func TestCanonicalQuery(t *testing.T) {
	ps := []QueryParam{{Name: "prefix", Value: "p/"}, {Name: "list-type", Value: "2"}, {Name: "uploads", Value: ""}}
	if got := CanonicalQuery(ps, false); got != "list-type=2&prefix=p%2F&uploads" {
		t.Fatal(got)
	}
	if got := CanonicalQuery(ps, true); got != "list-type=2&prefix=p%2F&uploads=" {
		t.Fatal(got)
	}
}

// FuzzURIDecode checks that decoding never panics, that encoding then
// decoding round-trips any bytes, and that decoding never grows a string.
func FuzzURIDecode(f *testing.F) {
	for _, s := range []string{"", "%", "%2", "%2F", "%zz", "a%00b", "%E4%BD%A0", "+%2B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := URIDecode(s)
		if len(d) > len(s) {
			t.Fatalf("decoded %q longer than %q", d, s)
		}
		for _, slash := range []bool{false, true} {
			if got := URIDecode(URIEncode(s, slash)); got != s {
				t.Fatalf("round trip of %q gave %q", s, got)
			}
		}
		k := NewKeys("pre", 0)
		p, _ := k.Physical(s)
		if l, err := k.Logical(p); err != nil || l != s {
			t.Fatalf("key %q -> %q -> %q (%v)", s, p, l, err)
		}
	})
}

func TestVecReader(t *testing.T) {
	bufs := [][]byte{[]byte("ab"), nil, []byte("cde"), {}, []byte("f")}
	r := NewVecReader(bufs)
	got, _ := io.ReadAll(r)
	if string(got) != "abcdef" || r.Size() != 6 {
		t.Fatal(string(got))
	}
	if _, err := r.Seek(3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if n, err := r.WriteTo(&b); err != nil || n != 3 || b.String() != "def" {
		t.Fatal(n, err, b.String())
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("negative seek accepted")
	}
	r.Seek(-2, io.SeekEnd)
	one := make([]byte, 1)
	r.Read(one)
	if one[0] != 'e' {
		t.Fatal(string(one))
	}
}

func TestSplitVec(t *testing.T) {
	parts := SplitVec([][]byte{[]byte("abc"), nil, []byte("defgh")}, 3)
	var got []string
	for _, p := range parts {
		got = append(got, string(bytes.Join(p, nil)))
	}
	if len(got) != 3 || got[0] != "abc" || got[1] != "def" || got[2] != "gh" {
		t.Fatal(got)
	}
}

func TestErrorCodes(t *testing.T) {
	e := &Error{Code: CodeFileNotFound, Op: "GET", Key: "k\x00", Status: 404, ServiceCode: "NoSuchKey", Err: io.ErrUnexpectedEOF}
	if !errors.Is(e, ErrNotFound) || errors.Is(e, ErrReadFail) || !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Fatal("sentinel matching")
	}
	if CodeOf(e) != CodeFileNotFound || CodeOf(nil) != CodeOK || CodeOf(ErrUnavailable) != CodeDFSServiceUnavailable ||
		CodeOf(errors.New("x")) != CodeInternalError {
		t.Fatal("CodeOf")
	}
	if s := e.Error(); s != `objstore: GET "k\x00" FILE_NOT_FOUND (HTTP 404 NoSuchKey): unexpected EOF` {
		t.Fatal(s)
	}
	if int(CodeDFSServiceUnavailable) != -1601 || int(CodeInvalidParams) != -600 || int(CodeFileReadFail) != -1102 {
		t.Fatal("codes drifted from Mooncake's")
	}
}
