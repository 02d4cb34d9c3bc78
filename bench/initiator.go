package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/transport"
)

// Counters are updated live by a run, for progress display.
type Counters struct {
	Bytes   atomic.Uint64
	Batches atomic.Uint64
}

// Result is the outcome of one initiator run.
type Result struct {
	Duration  time.Duration
	Batches   uint64
	BatchSize int
	BlockSize uint64
	Threads   int
	// Latencies are the batch completion times (Submit to the last
	// request done), sorted ascending.
	Latencies []time.Duration
}

// Bytes is the payload moved.
func (r *Result) Bytes() uint64 { return r.Batches * uint64(r.BatchSize) * r.BlockSize }

// Throughput is bytes per second.
func (r *Result) Throughput() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Bytes()) / r.Duration.Seconds()
}

// Percentile returns the p-th (0..1) batch latency, 0 without samples.
func (r *Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(p * float64(len(r.Latencies)))
	return r.Latencies[min(i, len(r.Latencies)-1)]
}

// Line is transfer_engine_bench's closing line:
// "Test completed: duration D, batch count N, throughput X GB/s".
func (r *Result) Line(cfg Config) string {
	return fmt.Sprintf("Test completed: duration %.2f, batch count %d, throughput %.*f %s/s",
		r.Duration.Seconds(), r.Batches, cfg.ReportPrecision, r.Throughput()/cfg.UnitBytes(), cfg.ReportUnit)
}

// RunInitiator runs the transfer_engine_bench workload against the open
// segment seg. Every thread first runs one untimed warm-up batch (page
// first-touch and lane setup would otherwise land in the first timed
// batch); then the clock starts and cfg.Threads goroutines each submit a batch of cfg.BatchSize
// requests of cfg.BlockSize bytes, wait for it, reset it and repeat until
// cfg.Duration has passed or ctx ends. Request i of thread t uses local
// and remote offset BlockSize·(i·Threads + t); thread t targets the
// peer's buffer t mod (number of buffers). local must be registered with
// e. live, if not nil, is updated as batches finish.
func RunInitiator(ctx context.Context, e *engine.Engine, seg engine.SegmentID, local []byte, cfg Config, live *Counters) (*Result, error) {
	d, err := e.SegmentDesc(seg)
	if err != nil {
		return nil, err
	}
	if len(d.Buffers) == 0 {
		return nil, fmt.Errorf("bench: target segment %s has no registered buffer", d.Name)
	}
	span := cfg.BlockSize * uint64(cfg.BatchSize) * uint64(cfg.Threads)
	if span > uint64(len(local)) {
		return nil, fmt.Errorf("%w: the workload spans %d bytes, the local buffer has %d", ErrConfig, span, len(local))
	}
	op := transport.Read
	if cfg.Operation == "write" {
		op = transport.Write
	}
	if live == nil {
		live = &Counters{}
	}
	threads := make([][]time.Duration, cfg.Threads)
	errs := make([]error, cfg.Threads)
	var batches atomic.Uint64
	var start, deadline time.Time
	var warm, wg sync.WaitGroup
	go1 := make(chan struct{})
	for t := range cfg.Threads {
		buf := d.Buffers[t%len(d.Buffers)]
		if span > buf.Length {
			return nil, fmt.Errorf("%w: the workload spans %d bytes, the target's buffer %d has %d", ErrConfig, span, t%len(d.Buffers), buf.Length)
		}
	}
	for t := range cfg.Threads {
		buf := d.Buffers[t%len(d.Buffers)]
		wg.Add(1)
		warm.Add(1)
		go func() {
			defer wg.Done()
			threads[t], errs[t] = runThread(ctx, e, seg, op, engine.Addr(local), buf.Addr, t, cfg, &warm, go1, &deadline, live, &batches)
		}()
	}
	warm.Wait()
	start = time.Now()
	deadline = start.Add(cfg.Duration)
	close(go1)
	wg.Wait()
	res := &Result{Duration: time.Since(start), Batches: batches.Load(), BatchSize: cfg.BatchSize, BlockSize: cfg.BlockSize, Threads: cfg.Threads}
	for t := range threads {
		if errs[t] != nil {
			return res, fmt.Errorf("bench: thread %d: %w", t, errs[t])
		}
		res.Latencies = append(res.Latencies, threads[t]...)
	}
	slices.Sort(res.Latencies)
	return res, nil
}

// runThread is one worker. It first runs one untimed batch (first touch of
// the buffers and connection setup), signals warm, waits for begin, then
// loops until *deadline (written before begin is closed).
func runThread(ctx context.Context, e *engine.Engine, seg engine.SegmentID, op transport.Opcode,
	localBase, remoteBase uint64, t int, cfg Config, warm *sync.WaitGroup, begin <-chan struct{}, deadlinep *time.Time,
	live *Counters, batches *atomic.Uint64) ([]time.Duration, error) {
	warmed := false
	defer func() {
		if !warmed {
			warm.Done()
		}
	}()
	b, err := e.AllocateBatch(cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	defer b.Free()
	reqs := make([]engine.Request, cfg.BatchSize)
	for i := range reqs {
		off := cfg.BlockSize * uint64(i*cfg.Threads+t)
		reqs[i] = engine.Request{Op: op, Local: localBase + off, Target: seg, TargetAddr: remoteBase + off, Length: cfg.BlockSize}
	}
	if err := b.Submit(reqs); err != nil {
		return nil, err
	}
	if err := b.Wait(ctx); err != nil {
		return nil, err
	}
	if err := b.Reset(); err != nil {
		return nil, err
	}
	warmed = true
	warm.Done()
	select {
	case <-begin:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	deadline := *deadlinep
	lat := make([]time.Duration, 0, 4096)
	batchBytes := uint64(cfg.BatchSize) * cfg.BlockSize
	for ctx.Err() == nil && time.Now().Before(deadline) {
		t0 := time.Now()
		if err := b.Submit(reqs); err != nil {
			return lat, err
		}
		if err := b.Wait(ctx); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
		batches.Add(1)
		live.Batches.Add(1)
		live.Bytes.Add(batchBytes)
		if err := b.Reset(); err != nil {
			return lat, err
		}
	}
	return lat, nil
}
