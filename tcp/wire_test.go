package tcp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fixtureDir is where the captured Mooncake bytes live: <repo>/../shared.
func fixtureDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("FERRY_MOONCAKE_FIXTURES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "fixtures", "mooncake-wire")
	}
	if _, err := os.Stat(filepath.Join(dir, "tcp-status-ok.bin")); err != nil {
		tb.Skipf("Mooncake wire fixtures not found in %s (set FERRY_MOONCAKE_FIXTURES): %v", dir, err)
	}
	return dir
}

func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

const (
	fixtureBaseA = 0x7fe063e00000 // capture A target buffer
	fixtureBaseB = 0x7f48c6000000 // capture B target buffer
)

func TestHeaderFixtures(t *testing.T) {
	cases := []struct {
		file  string
		want  Header
		clean bool // padding is zero, so our encoder must reproduce the bytes
	}{
		{"tcp-write-header.bin", Header{Size: 4096, Addr: fixtureBaseA, Write: true, V2: true}, true},
		{"tcp-read-header.bin", Header{Size: 4096, Addr: fixtureBaseA, V2: true}, true},
		{"tcp-write-header-dirty-pad.bin", Header{Size: 4096, Addr: fixtureBaseA + 0x1000, Write: true, V2: true}, false},
		{"tcp-read-header-dirty-pad.bin", Header{Size: 4096, Addr: fixtureBaseA + 0x1000, V2: true}, false},
		{"tcp-v1-write-header.bin", Header{Size: 4096, Addr: fixtureBaseB, Write: true}, true},
		{"tcp-v1-read-header.bin", Header{Size: 4096, Addr: fixtureBaseB}, true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw := fixture(t, c.file)
			if len(raw) != HeaderSize {
				t.Fatalf("fixture has %d bytes", len(raw))
			}
			h, err := ParseHeader(raw)
			if err != nil {
				t.Fatal(err)
			}
			if h != c.want {
				t.Fatalf("decoded %+v, want %+v", h, c.want)
			}
			var enc [HeaderSize]byte
			PutHeader(enc[:], h)
			if c.clean && !bytes.Equal(enc[:], raw) {
				t.Fatalf("encoded % x, fixture % x", enc, raw)
			}
			if !bytes.Equal(enc[:17], raw[:17]) || !bytes.Equal(enc[17:], make([]byte, 7)) {
				t.Fatalf("encoded % x: fields must match the fixture and padding must be zero", enc)
			}
		})
	}
}

func TestStatusFixtures(t *testing.T) {
	for file, code := range map[string]uint32{"tcp-status-ok.bin": StatusOK, "tcp-status-addr-rejected.bin": StatusAddrRejected} {
		raw := fixture(t, file)
		got, err := ParseStatus(raw)
		if err != nil || got != code {
			t.Fatalf("%s: code %d err %v, want %d", file, got, err, code)
		}
		var enc [StatusSize]byte
		PutStatus(enc[:], code)
		if !bytes.Equal(enc[:], raw) {
			t.Fatalf("%s: encoded % x, fixture % x", file, enc, raw)
		}
	}
}

func TestBadFrames(t *testing.T) {
	if _, err := ParseHeader(make([]byte, 23)); !errors.Is(err, ErrBadHeader) {
		t.Errorf("short header: %v", err)
	}
	h := make([]byte, HeaderSize)
	for _, op := range []byte{0x02, 0x7f, 0x82, 0xff} {
		h[16] = op
		if _, err := ParseHeader(h); !errors.Is(err, ErrBadHeader) {
			t.Errorf("opcode %#x accepted: %v", op, err)
		}
	}
	if _, err := ParseStatus([]byte{0, 0, 0, 0, 'V', 'T', 'C', 'X'}); !errors.Is(err, ErrBadStatus) {
		t.Errorf("bad magic accepted: %v", err)
	}
	if _, err := ParseStatus([]byte{0, 0, 0}); !errors.Is(err, ErrBadStatus) {
		t.Errorf("short status accepted: %v", err)
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(make([]byte, HeaderSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error does not wrap ErrBadHeader: %v", err)
			}
			return
		}
		if len(b) < HeaderSize || b[16]&0x7e != 0 {
			t.Fatalf("accepted %x", b)
		}
		var enc [HeaderSize]byte
		PutHeader(enc[:], h)
		if !bytes.Equal(enc[:17], b[:17]) {
			t.Fatalf("round trip % x -> %+v -> % x", b[:17], h, enc[:17])
		}
		back, err := ParseHeader(enc[:])
		if err != nil || back != h {
			t.Fatalf("re-decode %+v %v, want %+v", back, err, h)
		}
	})
}
