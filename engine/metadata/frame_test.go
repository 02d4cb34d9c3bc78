package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestFrameFixtures(t *testing.T) {
	cases := []struct {
		file string
		typ  FrameType
		body string
	}{
		{"handshake-probe-request-crafted.bin", FrameProbe, "{}\n"},
		{"handshake-probe-reply.bin", FrameProbe, "{\"status\":\"success\"}\n"},
		{"handshake-notify-request-crafted.bin", FrameNotify, "{\"name\":\"fixture\",\"notify_msg\":\"hello\"}\n"},
		{"handshake-notify-reply.bin", FrameNotify, "{\"name\":\"\",\"notify_msg\":\"success\"}\n"},
		{"handshake-metadata-request.bin", FrameMetadata, ""},
		{"handshake-metadata-reply.bin", FrameMetadata, ""},
	}
	for _, c := range cases {
		raw := fixture(t, c.file)
		typ, body, n, err := DecodeFrame(raw, 0)
		if err != nil || n != len(raw) || typ != c.typ {
			t.Fatalf("%s: DecodeFrame = %v, %d, %v", c.file, typ, n, err)
		}
		if c.body != "" && string(body) != c.body {
			t.Fatalf("%s: body %q", c.file, body)
		}
		// Byte-exact re-encoding.
		if got := AppendFrame(nil, typ, body); !bytes.Equal(got, raw) {
			t.Fatalf("%s: AppendFrame differs:\n got %x\nwant %x", c.file, got, raw)
		}
		// Reassembly across the three segments Mooncake writes, and
		// byte-at-a-time.
		for _, r := range []io.Reader{
			io.MultiReader(bytes.NewReader(raw[:8]), bytes.NewReader(raw[8:9]), bytes.NewReader(raw[9:])),
			iotest.OneByteReader(bytes.NewReader(raw)),
		} {
			typ2, body2, err := ReadFrame(r, 0)
			if err != nil || typ2 != c.typ || !bytes.Equal(body2, body) {
				t.Fatalf("%s: ReadFrame = %v, %q, %v", c.file, typ2, body2, err)
			}
		}
	}
}

func TestFrameErrors(t *testing.T) {
	probe := fixture(t, "handshake-probe-request-crafted.bin")
	huge := binary.LittleEndian.AppendUint64(nil, 1<<40)
	huge = append(huge, 1, '{')
	zero := binary.LittleEndian.AppendUint64(nil, 0)
	cases := []struct {
		name string
		in   []byte
		max  uint64
		want error
	}{
		{"oversized", huge, 0, ErrFrameTooLarge},
		{"over custom max", probe, 3, ErrFrameTooLarge},
		{"zero length", zero, 0, ErrBadFrame},
		{"short length", probe[:5], 0, ErrTruncated},
		{"no type", probe[:8], 0, ErrTruncated},
		{"short body", probe[:10], 0, ErrTruncated},
	}
	for _, c := range cases {
		if _, _, err := ReadFrame(bytes.NewReader(c.in), c.max); !errors.Is(err, c.want) {
			t.Errorf("%s: ReadFrame err = %v, want %v", c.name, err, c.want)
		}
		if _, _, _, err := DecodeFrame(c.in, c.max); !errors.Is(err, c.want) {
			t.Errorf("%s: DecodeFrame err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, _, err := ReadFrame(bytes.NewReader(nil), 0); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
}

func TestLegacyUntypedFrame(t *testing.T) {
	body := []byte(`{"local_nic_path":"a@mlx5_0"}`)
	raw := binary.LittleEndian.AppendUint64(nil, uint64(len(body)))
	raw = append(raw, body...)
	typ, got, err := ReadFrame(bytes.NewReader(raw), 0)
	if err != nil || typ != FrameConnection || !bytes.Equal(got, body) {
		t.Fatalf("ReadFrame legacy = %v, %q, %v", typ, got, err)
	}
	typ, got, n, err := DecodeFrame(raw, 0)
	if err != nil || typ != FrameConnection || !bytes.Equal(got, body) || n != len(raw) {
		t.Fatalf("DecodeFrame legacy = %v, %q, %d, %v", typ, got, n, err)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	for _, name := range []string{"handshake-probe-request-crafted.bin", "handshake-notify-reply.bin", "handshake-metadata-reply.bin"} {
		f.Add(fixture(f, name), uint32(0))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, uint32(0))
	f.Fuzz(func(t *testing.T, in []byte, max uint32) {
		m := uint64(max) % (2 << 20)
		typ, body, n, err := DecodeFrame(in, m)
		typ2, body2, err2 := ReadFrame(bytes.NewReader(in), m)
		if err != nil {
			if err2 == nil {
				t.Fatalf("DecodeFrame failed (%v) but ReadFrame succeeded", err)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrBadFrame) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if err2 != nil || typ != typ2 || !bytes.Equal(body, body2) {
			t.Fatalf("ReadFrame disagrees: %v %v", err2, typ2)
		}
		if typ > FrameProbe || n < 9 || n > len(in) {
			t.Fatalf("bad result type %d n %d", typ, n)
		}
		if in[8] <= 3 && !bytes.Equal(AppendFrame(nil, typ, body), in[:n]) {
			t.Fatal("re-encoding differs")
		}
	})
}
