package demo

import (
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"strings"
)

// Defaults for Options fields left zero.
const (
	DefaultObjects = 256
	DefaultMinSize = 256 << 10
	DefaultMaxSize = 4 << 20
	DefaultBatch   = 16
	DefaultSeed    = 1
	// DefaultBucket is the embedded object store's bucket.
	DefaultBucket = "ferry-demo"
	// MaxObjectSize is the largest --max-size accepted.
	MaxObjectSize = 1 << 30
	// MaxBatchBytes caps Batch times the slot size of MaxSize: the owner
	// stages up to three such batches at once.
	MaxBatchBytes = 4 << 30
	// MaxObjects caps Objects.
	MaxObjects = 1_000_000
)

// Options configure Run. The zero value runs the default demo on the
// embedded object store.
type Options struct {
	// Objects is the number of objects written and read back.
	Objects int
	// MinSize and MaxSize bound the object sizes in bytes; sizes are
	// drawn log-uniformly between them (KV-cache blocks of mixed
	// lengths), deterministically from Seed.
	MinSize, MaxSize int64
	// Batch is the number of keys per Put and Get call.
	Batch int
	// Store selects the object store: "" (the embedded S3 server), or
	// s3://BUCKET[/PREFIX] or oss://BUCKET[/PREFIX] for a real one,
	// configured by the MOONCAKE_S3_* / AWS_* or MOONCAKE_OSS_* variables
	// (read through Lookup). The bucket named here overrides
	// MOONCAKE_S3_BUCKET / MOONCAKE_OSS_BUCKET; PREFIX is the owner's key
	// prefix.
	Store string
	// Keep leaves the objects in a real store; by default Run deletes
	// what it wrote. The embedded store vanishes with Run either way.
	Keep bool
	// Seed selects the sizes and the content.
	Seed uint64
	// Host is the address every part binds and advertises; "" means
	// 127.0.0.1.
	Host string
	// Lookup reads environment variables (object-store configuration);
	// nil means os.LookupEnv.
	Lookup func(string) (string, bool)
	// Logger receives the parts' warnings; nil means slog.Default().
	Logger *slog.Logger
	// Progress is told how far each phase is; nil reports nothing.
	Progress Progress

	// CorruptObjects is for tests: after the put phase, one byte of each
	// listed object (by index) is flipped in the object store itself, so
	// the read path must return different bytes and Run must detect them.
	CorruptObjects []int
}

// withDefaults fills zero fields and validates the result. Errors wrap
// ErrInvalidOptions and name the field (as its command-line flag).
func (o Options) withDefaults() (Options, error) {
	if o.Objects == 0 {
		o.Objects = DefaultObjects
	}
	if o.MinSize == 0 {
		o.MinSize = DefaultMinSize
	}
	if o.MaxSize == 0 {
		o.MaxSize = max(DefaultMaxSize, o.MinSize)
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = nopProgress{}
	}
	switch {
	case o.Objects < 0 || o.Objects > MaxObjects:
		return o, fmt.Errorf("%w: --objects %d: want 1..%d", ErrInvalidOptions, o.Objects, MaxObjects)
	case o.MinSize < 1:
		return o, fmt.Errorf("%w: --min-size %d: want at least 1 byte", ErrInvalidOptions, o.MinSize)
	case o.MaxSize > MaxObjectSize:
		return o, fmt.Errorf("%w: --max-size %d: want at most %d (1 GiB)", ErrInvalidOptions, o.MaxSize, MaxObjectSize)
	case o.MaxSize < o.MinSize:
		return o, fmt.Errorf("%w: --max-size %d is below --min-size %d", ErrInvalidOptions, o.MaxSize, o.MinSize)
	case o.Batch < 0:
		return o, fmt.Errorf("%w: --batch %d: want at least 1", ErrInvalidOptions, o.Batch)
	}
	o.Batch = min(o.Batch, o.Objects)
	if bb := int64(o.Batch) * slotBytes(o.MaxSize); bb > MaxBatchBytes {
		return o, fmt.Errorf("%w: --batch %d with --max-size %d needs %d staging bytes per batch; the limit is %d: lower one of them",
			ErrInvalidOptions, o.Batch, o.MaxSize, bb, int64(MaxBatchBytes))
	}
	for _, i := range o.CorruptObjects {
		if i < 0 || i >= o.Objects {
			return o, fmt.Errorf("%w: CorruptObjects: index %d outside [0, %d)", ErrInvalidOptions, i, o.Objects)
		}
	}
	if _, err := ParseStore(o.Store); err != nil {
		return o, err
	}
	return o, nil
}

// slotBytes is the staging block an object of n bytes occupies: the next
// power of two of at least one page.
func slotBytes(n int64) int64 {
	if n <= 4096 {
		return 4096
	}
	return 1 << bits.Len64(uint64(n-1))
}

// StoreURL is a parsed --store value.
type StoreURL struct {
	// Kind is "s3" or "oss"; "" means the embedded store.
	Kind string
	// Bucket is the bucket name.
	Bucket string
	// Prefix is the owner key prefix, without leading or trailing '/'.
	Prefix string
}

// String gives the URL back in its canonical form.
func (s StoreURL) String() string {
	if s.Kind == "" {
		return "embedded"
	}
	if s.Prefix == "" {
		return s.Kind + "://" + s.Bucket
	}
	return s.Kind + "://" + s.Bucket + "/" + s.Prefix
}

// ParseStore parses "", "s3://BUCKET[/PREFIX]" or "oss://BUCKET[/PREFIX]".
// Errors wrap ErrInvalidOptions.
func ParseStore(s string) (StoreURL, error) {
	if s == "" {
		return StoreURL{}, nil
	}
	kind, rest, ok := strings.Cut(s, "://")
	kind = strings.ToLower(kind)
	if !ok || (kind != "s3" && kind != "oss") {
		return StoreURL{}, fmt.Errorf("%w: --store %q: want s3://BUCKET[/PREFIX] or oss://BUCKET[/PREFIX]", ErrInvalidOptions, s)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return StoreURL{}, fmt.Errorf("%w: --store %q: the bucket name is empty", ErrInvalidOptions, s)
	}
	if strings.ContainsAny(bucket, " ?#\\") {
		return StoreURL{}, fmt.Errorf("%w: --store %q: bucket %q is not a valid bucket name", ErrInvalidOptions, s, bucket)
	}
	return StoreURL{Kind: kind, Bucket: bucket, Prefix: strings.Trim(prefix, "/")}, nil
}

// Progress receives a phase's progress. Run calls it from one goroutine
// at a time.
type Progress interface {
	// Start begins a phase ("put" or "get") of the given size.
	Start(phase string, objects int, bytes int64)
	// Add reports objects and bytes finished since the last call.
	Add(objects int, bytes int64)
	// Finish ends the phase.
	Finish()
}

type nopProgress struct{}

func (nopProgress) Start(string, int, int64) {}
func (nopProgress) Add(int, int64)           {}
func (nopProgress) Finish()                  {}

// LineProgress writes a plain line at the start of each phase, at every
// quarter, and at its end: what `ferry demo` prints when stdout is not a
// terminal.
func LineProgress(w io.Writer) Progress { return &lineProgress{w: w} }

type lineProgress struct {
	w            io.Writer
	phase        string
	total, done  int
	bytes, doneB int64
	nextReport   int
}

func (p *lineProgress) Start(phase string, objects int, bytes int64) {
	p.phase, p.total, p.bytes, p.done, p.doneB = phase, objects, bytes, 0, 0
	p.nextReport = max(1, objects/4)
	fmt.Fprintf(p.w, "%s: %d objects, %s\n", phase, objects, human(bytes))
}

func (p *lineProgress) Add(objects int, bytes int64) {
	p.done += objects
	p.doneB += bytes
	if p.done >= p.nextReport && p.done < p.total {
		fmt.Fprintf(p.w, "%s: %d/%d objects, %s\n", p.phase, p.done, p.total, human(p.doneB))
		for p.nextReport <= p.done {
			p.nextReport += max(1, p.total/4)
		}
	}
}

func (p *lineProgress) Finish() {
	fmt.Fprintf(p.w, "%s: done, %d/%d objects, %s\n", p.phase, p.done, p.total, human(p.doneB))
}

// human formats a byte count with binary units.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= unit
		if f < unit {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f PiB", f/unit)
}
