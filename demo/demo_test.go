package demo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var prog bytes.Buffer
	rep, err := Run(ctx, Options{Objects: 24, MinSize: 3000, MaxSize: 300 << 10, Batch: 5, Progress: LineProgress(&prog), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", prog.String(), out.String())
	if !rep.OK() || rep.Verified != 24 || rep.VerifiedBytes != rep.Bytes {
		t.Fatalf("report not OK: verified %d objects, %d of %d bytes", rep.Verified, rep.VerifiedBytes, rep.Bytes)
	}
	if !strings.Contains(out.String(), "verified:  all 24 objects") {
		t.Fatalf("report does not say all objects were verified:\n%s", out.String())
	}
	if got := rep.Transports["tcp"]; got["write"] < uint64(rep.Bytes) || got["read"] < uint64(rep.Bytes) {
		t.Fatalf("tcp moved %v, want at least %d each way", got, rep.Bytes)
	}
}

// quietLogger keeps the parts' start-up lines out of the test output.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func TestRunDetectsCorruptedByte(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Options{Objects: 12, MinSize: 5000, MaxSize: 200 << 10, Batch: 4,
		CorruptObjects: []int{7}, Logger: quietLogger()})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Run error = %v, want ErrMismatch", err)
	}
	if rep == nil || rep.OK() {
		t.Fatal("report claims success with a corrupted object")
	}
	if rep.MismatchCount != 1 || len(rep.Mismatches) != 1 || rep.Mismatches[0].Index != 7 {
		t.Fatalf("mismatches = %d %+v, want exactly object 7", rep.MismatchCount, rep.Mismatches)
	}
	// The flipped byte is the middle one.
	if want := objectSize(DefaultSeed, 7, 5000, 200<<10) / 2; rep.Mismatches[0].Offset != want {
		t.Fatalf("first differing offset %d, want %d", rep.Mismatches[0].Offset, want)
	}
	if rep.Verified != 11 {
		t.Fatalf("verified %d objects, want the 11 intact ones", rep.Verified)
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	if !strings.Contains(out.String(), "1 objects DIFFER") || !strings.Contains(out.String(), "object 7 (demo/run/obj-000007)") {
		t.Fatalf("report does not name the corrupted object:\n%s", out.String())
	}
}

func TestOptionsRejectBadInput(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Objects: -1}, "--objects"},
		{Options{MinSize: -5}, "--min-size"},
		{Options{MinSize: 10 << 20, MaxSize: 1 << 20}, "--max-size"},
		{Options{MaxSize: 2 << 30}, "--max-size"},
		{Options{Batch: -2}, "--batch"},
		{Options{Batch: 5000, Objects: 5000, MaxSize: 16 << 20}, "--batch"},
		{Options{Store: "gs://bucket"}, "--store"},
		{Options{Store: "s3://"}, "bucket name is empty"},
		{Options{Objects: 3, CorruptObjects: []int{3}}, "CorruptObjects"},
	} {
		_, err := Run(context.Background(), tc.o)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want ErrInvalidOptions naming %q", tc.o, err, tc.want)
		}
	}
}

func TestParseStore(t *testing.T) {
	for in, want := range map[string]StoreURL{
		"":                      {},
		"s3://b":                {Kind: "s3", Bucket: "b"},
		"S3://b/p/q/":           {Kind: "s3", Bucket: "b", Prefix: "p/q"},
		"oss://bk//deep/prefix": {Kind: "oss", Bucket: "bk", Prefix: "deep/prefix"},
	} {
		got, err := ParseStore(in)
		if err != nil || got != want {
			t.Errorf("ParseStore(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if s := (StoreURL{Kind: "oss", Bucket: "b", Prefix: "x"}).String(); s != "oss://b/x" {
		t.Errorf("String() = %q", s)
	}
}

func TestContentDeterministicAndChecked(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 4096, 100003} {
		a, b := make([]byte, n), make([]byte, n)
		fill(3, 5, a)
		fill(3, 5, b)
		if !bytes.Equal(a, b) {
			t.Fatalf("size %d: fill is not deterministic", n)
		}
		if off := verify(3, 5, a); off != -1 {
			t.Fatalf("size %d: intact content reported different at %d", n, off)
		}
		if n == 0 {
			continue
		}
		for _, at := range []int{0, n / 2, n - 1} {
			a[at] ^= 0x10
			if off := verify(3, 5, a); off != int64(at) {
				t.Fatalf("size %d: flipped byte %d reported at %d", n, at, off)
			}
			a[at] ^= 0x10
		}
		if n >= 16 {
			fill(3, 6, b)
			if bytes.Equal(a, b) {
				t.Fatalf("size %d: objects 5 and 6 have the same content", n)
			}
		}
	}
	for i := 0; i < 1000; i++ {
		s := objectSize(9, i, 256<<10, 4<<20)
		if s < 256<<10 || s > 4<<20 {
			t.Fatalf("size %d out of range", s)
		}
	}
}

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p50, p90, p99 := percentiles(d)
	if p50 != 50*time.Millisecond || p90 != 90*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("percentiles = %v %v %v", p50, p90, p99)
	}
	if a, b, c := percentiles(nil); a|b|c != 0 {
		t.Fatal("empty percentiles not zero")
	}
}

func TestLineProgress(t *testing.T) {
	var b bytes.Buffer
	p := LineProgress(&b)
	p.Start("put", 8, 800)
	for i := 0; i < 8; i++ {
		p.Add(1, 100)
	}
	p.Finish()
	want := "put: 8 objects, 800 B\nput: 2/8 objects, 200 B\nput: 4/8 objects, 400 B\nput: 6/8 objects, 600 B\nput: done, 8/8 objects, 800 B\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestS3ServerRejectsBadBucket(t *testing.T) {
	if _, err := ListenS3Server("127.0.0.1:0", "x"); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bucket x: %v", err)
	}
	srv, err := ListenS3Server("127.0.0.1:0", "fine-bucket")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

// cancelOnFirst cancels a context at the first progress report.
type cancelOnFirst struct{ cancel context.CancelFunc }

func (c cancelOnFirst) Start(string, int, int64) {}
func (c cancelOnFirst) Add(int, int64)           { c.cancel() }
func (c cancelOnFirst) Finish()                  {}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, Options{Objects: 64, MinSize: 4096, MaxSize: 64 << 10, Batch: 2,
		Progress: cancelOnFirst{cancel}, Logger: quietLogger()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error %v, want context.Canceled", err)
	}
	if rep == nil || rep.Put.Objects+rep.Put.Failed >= 64 || rep.Get.Objects != 0 {
		t.Fatalf("cancelled run still did the work: %+v", rep)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("cancelled run took %v", d)
	}
}
