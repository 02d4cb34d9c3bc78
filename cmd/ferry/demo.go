package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ferrylabs/ferry/demo"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

type demoFlags struct {
	objects  int
	minSize  string
	maxSize  string
	batch    int
	store    string
	keep     bool
	seed     uint64
	host     string
	progress string
	timeout  time.Duration
}

func newDemoCmd() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run Ferry's main job end to end in one process and verify every byte",
		Long: `demo starts, inside this process, an offload master, an offload owner and a
requester, each with its own transfer engine, talking over loopback. The
owner's object store is an embedded S3 server (gofakes3 with its in-memory
backend) unless --store names a real bucket.

It then writes --objects KV-cache-sized objects (sizes log-uniform between
--min-size and --max-size, pseudo-random content fixed by --seed) through the
write path:

  requester Put -> master BatchPutStart -> owner staging slots
  -> engine WRITE -> owner PutBatch to the object store -> master notified

reads them all back through the read path:

  requester Get -> master BatchGetReplicaList -> owner BatchGetOffloadObject
  -> object-store GetBatch straight into staging -> engine READ into the
  requester's registered memory -> ReleaseOffloadBuffer

and compares every byte with what it wrote. The report gives per-stage
latency percentiles (p50/p90/p99 over objects), put and get throughput,
and the transport the requester's engine used (tcp, or rdma where an RDMA
NIC is present).

The embedded S3 server does NOT check request signatures: it accepts any
credentials. It exists for this demo and for tests only. With
--store=s3://BUCKET[/PREFIX] or --store=oss://BUCKET[/PREFIX] the owner uses
a real object store configured as 'ferry owner' is: MOONCAKE_S3_ENDPOINT
(or AWS_ENDPOINT_URL), MOONCAKE_S3_REGION, MOONCAKE_S3_ACCESS_KEY_ID /
MOONCAKE_S3_SECRET_ACCESS_KEY (or the AWS_* set), or the MOONCAKE_OSS_*
variables; the bucket in --store overrides MOONCAKE_S3_BUCKET /
MOONCAKE_OSS_BUCKET. Objects go under PREFIX/demo/<run id>/ and are deleted
at the end unless --keep.

Staging memory is locked in RAM when RLIMIT_MEMLOCK allows it (root, or
'ulimit -l'); otherwise the demo says so once and uses unlocked memory,
which the TCP transport does not mind.

Exit status: 0 when every byte matched, 1 when any object failed or any
byte differed, 2 on bad flags.`,
		Example: `  # The default run: 256 objects of 256 KiB..4 MiB, 16 keys per call
  ferry demo

  # Fewer, bigger objects, 8 keys per call (staging: 3 x 8 x 16 MiB at the owner)
  ferry demo --objects 64 --min-size 1MiB --max-size 16MiB --batch 8

  # Against a real S3 bucket (credentials from the environment), keeping the objects
  MOONCAKE_S3_ENDPOINT=https://s3.us-east-1.amazonaws.com MOONCAKE_S3_REGION=us-east-1 \
    ferry demo --store s3://my-bucket/ferry-demo --keep`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.objects, "objects", demo.DefaultObjects, "number of objects to write and read back")
	fl.StringVar(&f.minSize, "min-size", "256KiB", "smallest object size (bytes, or with a KiB/MiB/GiB or K/M/G suffix)")
	fl.StringVar(&f.maxSize, "max-size", "4MiB", "largest object size")
	fl.IntVar(&f.batch, "batch", demo.DefaultBatch, "keys per Put and Get call")
	fl.StringVar(&f.store, "store", "", "object store: s3://BUCKET[/PREFIX] or oss://BUCKET[/PREFIX] (default: the embedded S3 server)")
	fl.BoolVar(&f.keep, "keep", false, "leave the objects in the --store bucket (default: delete them at the end)")
	fl.Uint64Var(&f.seed, "seed", demo.DefaultSeed, "seed of the object sizes and contents")
	fl.StringVar(&f.host, "host", "127.0.0.1", "address every part binds and advertises")
	fl.StringVar(&f.progress, "progress", "auto", "progress display: auto (a bar when stdout is a terminal), bar, lines or none")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "deadline for the whole run")
	cmd.AddCommand(newDemoS3Cmd())
	return cmd
}

// demoParseSize reads a byte count: a number with an optional K, M, G
// (or KiB, MiB, GiB, KB, MB, GB; all binary) suffix.
func demoParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	u := strings.ToUpper(t)
	mult := int64(1)
	for _, sfx := range []struct {
		s string
		m int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(u, sfx.s) {
			u, mult = strings.TrimSpace(u[:len(u)-len(sfx.s)]), sfx.m
			break
		}
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. 4096, 256KiB, 4MiB)", s)
	}
	return n * mult, nil
}

func runDemo(cmd *cobra.Command, f *demoFlags) error {
	minSize, err := demoParseSize(f.minSize)
	if err != nil {
		return usageError{fmt.Errorf("--min-size: %w", err)}
	}
	maxSize, err := demoParseSize(f.maxSize)
	if err != nil {
		return usageError{fmt.Errorf("--max-size: %w", err)}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"--objects", f.objects}, {"--batch", f.batch}} {
		if v.n < 1 {
			return usageError{fmt.Errorf("%s %d: want at least 1", v.name, v.n)}
		}
	}
	if minSize < 1 {
		return usageError{fmt.Errorf("--min-size %s: want at least 1 byte", f.minSize)}
	}
	if f.seed == 0 {
		return usageError{errors.New("--seed 0: want a non-zero seed")}
	}
	out := cmd.OutOrStdout()
	prog, finish, err := demoProgress(f.progress, out)
	if err != nil {
		return usageError{err}
	}
	defer finish()
	log := slog.Default()
	if !cmd.Flags().Changed("log-level") {
		// The parts log their start-up at info level; the demo's own
		// output is the report, so only warnings get through.
		log = slog.New(minLevel{h: log.Handler(), min: slog.LevelWarn})
	}
	opts := demo.Options{
		Objects: f.objects, MinSize: minSize, MaxSize: maxSize, Batch: f.batch,
		Store: f.store, Keep: f.keep, Seed: f.seed, Host: f.host, Logger: log, Progress: prog,
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rep, err := demo.Run(ctx, opts)
	finish()
	if errors.Is(err, demo.ErrInvalidOptions) {
		return usageError{err}
	}
	if rep != nil {
		fmt.Fprintln(out)
		if werr := rep.WriteText(out); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// demoProgress picks the progress display. finish may be called more than
// once.
func demoProgress(mode string, out io.Writer) (demo.Progress, func(), error) {
	isTerm := false
	if f, ok := out.(*os.File); ok {
		isTerm = term.IsTerminal(int(f.Fd()))
	}
	switch mode {
	case "auto":
		if isTerm {
			return &barProgress{w: out}, func() {}, nil
		}
		return demo.LineProgress(out), func() {}, nil
	case "bar":
		return &barProgress{w: out}, func() {}, nil
	case "lines":
		return demo.LineProgress(out), func() {}, nil
	case "none":
		return nil, func() {}, nil
	}
	return nil, nil, fmt.Errorf("--progress %q: want auto, bar, lines or none", mode)
}

// barProgress draws one progress bar per phase, counting bytes.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (b *barProgress) Start(phase string, objects int, bytes int64) {
	// The bar counts objects; the report gives the real throughput.
	b.bar = progressbar.NewOptions(objects,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%s %s", phase, demoHuman(bytes))),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("objects"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
	)
}

func (b *barProgress) Add(objects int, _ int64) {
	if b.bar != nil {
		_ = b.bar.Add(objects)
	}
}

func (b *barProgress) Finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
		b.bar = nil
	}
}

// demoHuman formats a byte count with binary units.
func demoHuman(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	f, units := float64(n)/(1<<10), []string{"KiB", "MiB", "GiB", "TiB"}
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// minLevel drops records below min.
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(a), min: m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{h: m.h.WithGroup(n), min: m.min} }

func newDemoS3Cmd() *cobra.Command {
	var listen, bucket string
	cmd := &cobra.Command{
		Use:    "s3-server",
		Short:  "Serve the demo's embedded S3 store (gofakes3, in memory, signatures NOT checked) until SIGINT/SIGTERM",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := demo.ListenS3Server(listen, bucket)
			if err != nil {
				if errors.Is(err, demo.ErrInvalidOptions) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "s3 server listening on %s bucket %s\n", srv.Endpoint(), srv.Bucket())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return srv.Close()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "listen address")
	cmd.Flags().StringVar(&bucket, "bucket", demo.DefaultBucket, "bucket created at start")
	return cmd
}
