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
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ferrylabs/ferry/bench"
	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/engine/metadata"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

type benchFlags struct {
	cfg          bench.Config
	duration     int
	bufferSize   string
	blockSize    string
	loopback     bool
	sweep        bool
	sweepBlocks  string
	sweepThreads string
	baseline     bool
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{cfg: bench.Defaults()}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure transfer throughput between two engines (Mooncake transfer_engine_bench)",
		Long: `bench runs Mooncake's transfer_engine_bench workload over the Ferry engine,
with the same flags and the same closing line:

  Test completed: duration D, batch count N, throughput X GB/s

A target (--mode=target) registers --buffer_size bytes, prints its segment
name and serves until SIGINT or SIGTERM. An initiator opens that segment and
runs --threads workers; each submits a batch of --batch_size requests of
--block_size bytes (request i of thread t at offset block*(i*threads+t)),
waits for it, and repeats for --duration seconds.

--loopback starts the target inside the same process: a one-command demo.
--sweep runs every --sweep_blocks x --sweep_threads cell for --duration
seconds each and prints a table with batch latency percentiles.
--baseline also measures plain Go TCP over loopback at the same block size,
stream count (threads) and memory footprint (batch_size blocks per stream)
in the same run and prints the ratio; it is only a fair comparison when the
target is on this machine.`,
		Example: `  # Quick demo on one machine
  ferry bench --loopback --protocol=tcp --duration=5 --buffer_size=256MiB --threads=2

  # Two processes
  ferry bench --mode=target --protocol=tcp --local_server_name=10.0.0.1
  ferry bench --mode=initiator --protocol=tcp --segment_id=10.0.0.1:15123 --operation=write

  # Compare with raw TCP at 1 MiB blocks
  ferry bench --loopback --protocol=tcp --block_size=1MiB --batch_size=16 --threads=2 --baseline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, f) },
	}
	fl := cmd.Flags()
	c := &f.cfg
	fl.StringVar(&c.Mode, "mode", c.Mode, "initiator or target")
	fl.StringVar(&c.Operation, "operation", c.Operation, "read or write (initiator)")
	fl.StringVar(&c.Protocol, "protocol", c.Protocol, "transport: tcp or rdma")
	fl.StringVar(&c.MetadataServer, "metadata_server", c.MetadataServer, "P2PHANDSHAKE, or a central metadata store: etcd://h:p[,h:p] (or a bare h:p), redis://h:p, http://h:p/metadata")
	fl.StringVar(&c.LocalServerName, "local_server_name", c.LocalServerName, "this node's address (host[:port]; the port is ignored)")
	fl.StringVar(&c.SegmentID, "segment_id", "", "the target's segment name host:port, as the target printed it (initiator)")
	fl.IntVar(&c.BatchSize, "batch_size", c.BatchSize, "requests per batch")
	fl.StringVar(&f.blockSize, "block_size", "65536", "bytes per request (65536, 64KiB, 1MiB)")
	fl.IntVar(&c.Threads, "threads", c.Threads, "initiator threads")
	fl.IntVar(&f.duration, "duration", 10, "seconds to run (per cell with --sweep)")
	fl.StringVar(&f.bufferSize, "buffer_size", "1GiB", "registered buffer per engine")
	fl.StringVar(&c.ReportUnit, "report_unit", c.ReportUnit, "GB, GiB, Gb, MB, MiB, Mb, KB, KiB or Kb")
	fl.IntVar(&c.ReportPrecision, "report_precision", c.ReportPrecision, "digits after the decimal point")
	fl.BoolVar(&f.loopback, "loopback", false, "run a target engine in this process and benchmark against it")
	fl.BoolVar(&f.sweep, "sweep", false, "sweep block sizes x threads and print a table")
	fl.StringVar(&f.sweepBlocks, "sweep_blocks", "4KiB,64KiB,1MiB", "block sizes for --sweep")
	fl.StringVar(&f.sweepThreads, "sweep_threads", "1,2,4", "thread counts for --sweep")
	fl.BoolVar(&f.baseline, "baseline", false, "also measure raw Go TCP loopback at the same block size and streams, and print the ratio")
	return cmd
}

func runBench(cmd *cobra.Command, f *benchFlags) error {
	cfg := f.cfg
	var err error
	if cfg.BlockSize, err = bench.ParseSize(f.blockSize); err != nil {
		return usageError{fmt.Errorf("--block_size: %w", err)}
	}
	if cfg.BufferSize, err = bench.ParseSize(f.bufferSize); err != nil {
		return usageError{fmt.Errorf("--buffer_size: %w", err)}
	}
	if f.duration <= 0 {
		return usageError{fmt.Errorf("--duration=%d: want a positive number of seconds", f.duration)}
	}
	cfg.Duration = time.Duration(f.duration) * time.Second
	var blocks []uint64
	var threads []int
	if f.sweep {
		if blocks, err = bench.ParseList(f.sweepBlocks, bench.ParseSize); err != nil {
			return usageError{fmt.Errorf("--sweep_blocks: %w", err)}
		}
		if threads, err = bench.ParseList(f.sweepThreads, strconv.Atoi); err != nil {
			return usageError{fmt.Errorf("--sweep_threads: %w", err)}
		}
		// Validate against the largest cell.
		check := cfg
		check.BlockSize, check.Threads = 0, 0
		for _, b := range blocks {
			check.BlockSize = max(check.BlockSize, b)
		}
		for _, t := range threads {
			check.Threads = max(check.Threads, t)
		}
		if err := check.Validate(); err != nil {
			return usageError{err}
		}
	} else if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	if cfg.Mode == "initiator" && !f.loopback && cfg.SegmentID == "" {
		return usageError{errors.New("--segment_id is required in initiator mode (or use --loopback)")}
	}
	if f.baseline && cfg.Protocol != "tcp" {
		return usageError{errors.New("--baseline compares with raw TCP; use it with --protocol=tcp")}
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.Default()
	out := cmd.OutOrStdout()

	if cfg.Mode == "target" {
		n, err := bench.StartNode(cfg, log, nil)
		if err != nil {
			return err
		}
		defer n.Close()
		fmt.Fprintf(out, "segment name: %s\n", n.Name())
		fmt.Fprintf(out, "run the initiator with --segment_id=%s; stop with Ctrl-C\n", n.Name())
		<-ctx.Done()
		return nil
	}

	segName := cfg.SegmentID
	if f.loopback {
		tcfg := cfg
		tcfg.Mode = "target"
		if sv, _ := metadata.ParseServer(cfg.MetadataServer); sv.Kind != metadata.KindP2P {
			// Both engines publish under their names in one store.
			tcfg.LocalServerName += "-target"
		}
		target, err := bench.StartNode(tcfg, log, nil)
		if err != nil {
			return err
		}
		defer target.Close()
		segName = target.Name()
	}
	n, err := bench.StartNode(cfg, log, nil)
	if err != nil {
		return err
	}
	defer n.Close()
	seg, err := n.Engine.OpenSegment(ctx, segName)
	if err != nil {
		return fmt.Errorf("opening segment %s: %w", segName, err)
	}

	if !f.sweep {
		res, err := runWithProgress(ctx, out, n, seg, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, res.Line(cfg))
		if f.baseline {
			raw, err := bench.RawTCP(ctx, cfg.Operation == "write", cfg.BlockSize, cfg.Threads, cfg.BatchSize, cfg.Duration)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Raw TCP loopback: throughput %.*f %s/s; ferry/raw = %.0f%%\n",
				cfg.ReportPrecision, raw/cfg.UnitBytes(), cfg.ReportUnit, 100*res.Throughput()/raw)
		}
		return nil
	}
	var rows []bench.Row
	for _, b := range blocks {
		for _, t := range threads {
			c := cfg
			c.BlockSize, c.Threads = b, t
			res, err := runWithProgress(ctx, out, n, seg, c)
			if err != nil {
				return err
			}
			row := bench.Row{Result: res}
			if f.baseline {
				if row.Baseline, err = bench.RawTCP(ctx, c.Operation == "write", b, t, c.BatchSize, c.Duration); err != nil {
					return err
				}
			}
			rows = append(rows, row)
		}
	}
	return bench.WriteTable(out, cfg, rows)
}

// runWithProgress runs the initiator and, when out is a terminal, keeps a
// live throughput line updated.
func runWithProgress(ctx context.Context, out io.Writer, n *bench.Node, seg engine.SegmentID, cfg bench.Config) (*bench.Result, error) {
	var live bench.Counters
	done := make(chan struct{})
	finished := make(chan struct{})
	tty := false
	if fd, ok := out.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(fd.Fd())) {
		tty = true
	}
	go func() {
		defer close(finished)
		if !tty {
			<-done
			return
		}
		start := time.Now()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		var lastBytes uint64
		last := start
		for {
			select {
			case <-done:
				fmt.Fprint(out, "\r\033[K")
				return
			case now := <-tick.C:
				b := live.Bytes.Load()
				rate := float64(b-lastBytes) / now.Sub(last).Seconds()
				lastBytes, last = b, now
				fmt.Fprintf(out, "\r\033[K%5.1fs  %s x %d threads  %.*f %s/s  %d batches",
					now.Sub(start).Seconds(), bench.SizeString(cfg.BlockSize), cfg.Threads,
					cfg.ReportPrecision, rate/cfg.UnitBytes(), cfg.ReportUnit, live.Batches.Load())
			}
		}
	}()
	res, err := bench.RunInitiator(ctx, n.Engine, seg, n.Buf.Bytes, cfg, &live)
	close(done)
	<-finished
	return res, err
}
