package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one cell of a sweep.
type Row struct {
	Result *Result
	// Baseline is the raw TCP throughput in bytes/s at the same block size
	// and stream count, 0 when not measured.
	Baseline float64
}

// WriteTable prints rows as an aligned table: block size, threads,
// throughput in cfg's unit, batch latency percentiles and, when measured,
// the raw baseline and the ratio to it.
func WriteTable(w io.Writer, cfg Config, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := fmt.Sprintf("block\tthreads\tbatches\t%s/s\tp50\tp99\tp999\t", cfg.ReportUnit)
	withBase := false
	for _, r := range rows {
		if r.Baseline > 0 {
			withBase = true
		}
	}
	if withBase {
		hdr += fmt.Sprintf("raw %s/s\tratio\t", cfg.ReportUnit)
	}
	fmt.Fprintln(tw, hdr)
	for _, r := range rows {
		res := r.Result
		line := fmt.Sprintf("%s\t%d\t%d\t%.*f\t%s\t%s\t%s\t", SizeString(res.BlockSize), res.Threads, res.Batches,
			cfg.ReportPrecision, res.Throughput()/cfg.UnitBytes(),
			latString(res.Percentile(0.5)), latString(res.Percentile(0.99)), latString(res.Percentile(0.999)))
		if withBase {
			if r.Baseline > 0 {
				line += fmt.Sprintf("%.*f\t%.0f%%\t", cfg.ReportPrecision, r.Baseline/cfg.UnitBytes(), 100*res.Throughput()/r.Baseline)
			} else {
				line += "-\t-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func latString(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// SizeString prints a byte count in the largest binary unit that divides it.
func SizeString(n uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// ParseList reads a comma-separated list with parse.
func ParseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty list %q", ErrConfig, s)
	}
	return out, nil
}
