package metadata

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDescFixturesRoundTrip(t *testing.T) {
	for _, name := range []string{"handshake-metadata-request.bin", "handshake-metadata-reply.bin"} {
		raw := fixture(t, name)
		_, body, _, err := DecodeFrame(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeDesc(body)
		if err != nil {
			t.Fatalf("%s: DecodeDesc: %v", name, err)
		}
		if d.Protocol != "tcp" || d.TCPProtoVersion != 2 || d.TCPDataPort == 0 || len(d.Buffers) != 1 {
			t.Fatalf("%s: decoded %+v", name, d)
		}
		if d.Buffers[0].Name != d.Name || d.Buffers[0].Addr < 1<<40 {
			t.Fatalf("%s: buffer %+v", name, d.Buffers[0])
		}
		ts, err := time.ParseInLocation(TimestampLayout, d.Timestamp, time.Local)
		if err != nil {
			t.Fatalf("%s: timestamp %q: %v", name, d.Timestamp, err)
		}
		enc := AppendDesc(nil, d, ts)
		if !bytes.Equal(enc, body) {
			t.Fatalf("%s: re-encoded descriptor differs:\n got %s\nwant %s", name, enc, body)
		}
		if got := AppendFrame(nil, FrameMetadata, enc); !bytes.Equal(got, raw) {
			t.Fatalf("%s: frame differs", name)
		}
	}
}

var tsRE = regexp.MustCompile(`"timestamp":"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}"}` + "\n$")

func TestEncodeDescFreshTimestamp(t *testing.T) {
	d := &SegmentDesc{Name: "127.0.0.1:15001", Protocol: "tcp", TCPDataPort: 16000, TCPProtoVersion: 2,
		Buffers: []BufferDesc{{Addr: 4096, Length: 8192, Name: "127.0.0.1:15001"}}}
	a := EncodeDesc(d)
	if !tsRE.Match(a) {
		t.Fatalf("timestamp shape: %s", a)
	}
	time.Sleep(2 * time.Millisecond)
	if b := EncodeDesc(d); bytes.Equal(a, b) {
		t.Fatal("timestamp not refreshed between encodes")
	}
	want := `{"buffers":[{"addr":4096,"length":8192,"name":"127.0.0.1:15001"}],"name":"127.0.0.1:15001","protocol":"tcp","tcp_data_port":16000,"tcp_proto_version":2,"timestamp":"`
	if !strings.HasPrefix(string(a), want) {
		t.Fatalf("got %s", a)
	}
}

func TestEncodeDescRDMA(t *testing.T) {
	d := &SegmentDesc{
		Name: "10.0.0.1:15001", Protocol: "rdma",
		Devices:        []DeviceDesc{{Name: "mlx5_0", LID: 17, GID: "fe:80"}, {Name: "mlx5_1", GID: "fe:81"}},
		PriorityMatrix: map[string][2][]string{"cpu:1": {{"mlx5_1"}, {"mlx5_0"}}, "cpu:0": {{"mlx5_0"}, nil}},
		Buffers: []BufferDesc{
			{Addr: 1 << 20, Length: 4096, Name: "cpu:0", LKey: []uint32{1, 2}, RKey: []uint32{3, 4}},
			{Addr: 2 << 20, Length: 4096, Name: "cpu:1", LKey: []uint32{5, 6}},
		},
	}
	enc := AppendDesc(nil, d, time.Date(2026, 1, 2, 3, 4, 5, 6000, time.Local))
	want := `{"buffers":[{"addr":1048576,"length":4096,"lkey":[1,2],"name":"cpu:0","rkey":[3,4]},{"addr":2097152,"length":4096,"lkey":[5,6],"name":"cpu:1","rkey":[]}],"devices":[{"gid":"fe:80","lid":17,"name":"mlx5_0"},{"gid":"fe:81","lid":0,"name":"mlx5_1"}],"name":"10.0.0.1:15001","priority_matrix":{"cpu:0":[["mlx5_0"],[]],"cpu:1":[["mlx5_1"],["mlx5_0"]]},"protocol":"rdma","timestamp":"2026-01-02 03:04:05.000006"}` + "\n"
	if string(enc) != want {
		t.Fatalf("got  %s\nwant %s", enc, want)
	}
	back, err := DecodeDesc(enc)
	if err != nil {
		t.Fatalf("DecodeDesc: %v", err)
	}
	if len(back.Buffers) != 2 || back.Buffers[1].RKey != nil && len(back.Buffers[1].RKey) != 0 || back.Devices[0].LID != 17 {
		t.Fatalf("decoded %+v", back)
	}
}

func TestDecodeDescValidation(t *testing.T) {
	const tcpOK = `{"buffers":[{"addr":4096,"length":10,"name":"h:1"}],"name":"h:1","protocol":"tcp","tcp_data_port":16000}`
	d, err := DecodeDesc([]byte(tcpOK))
	if err != nil || d.TCPProtoVersion != 1 {
		t.Fatalf("missing tcp_proto_version: %+v %v (want version 1)", d, err)
	}
	bad := []struct {
		name, in string
		want     error
	}{
		{"empty buffer name", `{"buffers":[{"addr":4096,"length":10,"name":""}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrInvalidDescriptor},
		{"zero addr", `{"buffers":[{"addr":0,"length":10,"name":"x"}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrInvalidDescriptor},
		{"zero length", `{"buffers":[{"addr":1,"length":0,"name":"x"}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrInvalidDescriptor},
		{"wrapping", `{"buffers":[{"addr":18446744073709551615,"length":2,"name":"x"}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrInvalidDescriptor},
		{"no data port", `{"buffers":[],"name":"h:1","protocol":"tcp"}`, ErrInvalidDescriptor},
		{"no name", `{"buffers":[],"protocol":"tcp","tcp_data_port":1}`, ErrInvalidDescriptor},
		{"no protocol", `{"buffers":[],"name":"h:1"}`, ErrInvalidDescriptor},
		{"rdma lkey count", `{"buffers":[{"addr":1,"length":1,"name":"cpu:0","lkey":[1],"rkey":[1]}],"devices":[{"name":"a","lid":1,"gid":"x"},{"name":"b","lid":1,"gid":"y"}],"name":"h:1","protocol":"rdma"}`, ErrInvalidDescriptor},
		{"rdma rkey count", `{"buffers":[{"addr":1,"length":1,"name":"cpu:0","lkey":[1,2],"rkey":[1]}],"devices":[{"name":"a","lid":1,"gid":"x"},{"name":"b","lid":1,"gid":"y"}],"name":"h:1","protocol":"rdma"}`, ErrInvalidDescriptor},
		{"addr as string", `{"buffers":[{"addr":"1","length":1,"name":"x"}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrMalformedJSON},
		{"negative length", `{"buffers":[{"addr":1,"length":-1,"name":"x"}],"name":"h:1","protocol":"tcp","tcp_data_port":1}`, ErrMalformedJSON},
		{"trailing garbage", tcpOK + `{}`, ErrMalformedJSON},
		{"not JSON", "\x00\x01garbage", ErrMalformedJSON},
		{"empty", "", ErrMalformedJSON},
	}
	for _, c := range bad {
		if _, err := DecodeDesc([]byte(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func FuzzDecodeDesc(f *testing.F) {
	for _, name := range []string{"handshake-metadata-request.bin", "handshake-metadata-reply.bin"} {
		_, body, _, _ := DecodeFrame(fixture(f, name), 0)
		f.Add(body)
	}
	f.Add([]byte(`{"buffers":[{"addr":1,"length":1,"name":"cpu:0","lkey":[1],"rkey":[]}],"devices":[{"name":"a","lid":1,"gid":"x"}],"name":"h:1","protocol":"rdma","priority_matrix":{"cpu:0":[["a"],[]]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := DecodeDesc(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedJSON) && !errors.Is(err, ErrInvalidDescriptor) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// A valid descriptor survives our encoder unchanged.
		enc := AppendDesc(nil, d, time.Unix(0, 0))
		d2, err := DecodeDesc(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		if d2.Name != d.Name || len(d2.Buffers) != len(d.Buffers) {
			t.Fatalf("round trip changed the descriptor: %s", enc)
		}
		for i := range d.Buffers {
			if d.Buffers[i].Addr != d2.Buffers[i].Addr || d.Buffers[i].Length != d2.Buffers[i].Length || d.Buffers[i].Name != d2.Buffers[i].Name {
				t.Fatalf("buffer %d changed: %s", i, enc)
			}
		}
	})
}
