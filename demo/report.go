package demo

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Stage is one step of a path with its latency percentiles over objects
// (each object sees the time of the call that carried it).
type Stage struct {
	Name          string
	P50, P90, P99 time.Duration
}

// Phase is the result of the put or the get phase.
type Phase struct {
	// Objects and Bytes count the objects that succeeded.
	Objects int
	Bytes   int64
	// Failed counts objects whose call returned an error; FirstErr is
	// the first such error.
	Failed   int
	FirstErr error
	// Elapsed is the phase's wall time.
	Elapsed time.Duration
	// Stages are the per-stage latency percentiles, in path order.
	Stages []Stage
}

// Throughput is Bytes per second of Elapsed (0 when nothing ran).
func (p Phase) Throughput() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Bytes) / p.Elapsed.Seconds()
}

// Mismatch is an object read back with different bytes.
type Mismatch struct {
	Index  int
	Key    string
	Offset int64 // first differing byte
}

// Report is what Run measured and checked.
type Report struct {
	// Objects and Bytes are the planned work; MinSize and MaxSize the
	// size bounds; Batch the keys per call.
	Objects          int
	Bytes            int64
	MinSize, MaxSize int64
	Batch            int
	// Store describes the object store used.
	Store string
	// Transports maps each transport that moved bytes for the requester
	// to its bytes by operation ("write" for puts, "read" for gets), as
	// counted by the requester's transfer engine.
	Transports map[string]map[string]uint64
	// Unlocked is true when staging memory could not be locked in RAM.
	Unlocked bool
	Put, Get Phase
	// Verified counts objects whose bytes all matched, VerifiedBytes
	// their bytes.
	Verified      int
	VerifiedBytes int64
	// Mismatches lists objects that differ (at most 10 are kept);
	// MismatchCount counts them all.
	Mismatches    []Mismatch
	MismatchCount int
	// Deleted counts objects removed from a real store at the end.
	Deleted int
	// Total is Run's wall time, set-up included.
	Total time.Duration
}

// OK reports whether every object was written, read and verified.
func (r *Report) OK() bool {
	return r.Put.Failed == 0 && r.Get.Failed == 0 && r.MismatchCount == 0 && r.Verified == r.Objects
}

// TransportNames lists the transports that moved bytes, sorted.
func (r *Report) TransportNames() []string {
	var names []string
	for n := range r.Transports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func rate(bps float64) string {
	return human(int64(bps)) + "/s"
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "objects:   %d, %s (sizes %s..%s), %d keys per call\n",
		r.Objects, human(r.Bytes), human(r.MinSize), human(r.MaxSize), r.Batch)
	fmt.Fprintf(&b, "store:     %s\n", r.Store)
	var trs []string
	for _, n := range r.TransportNames() {
		trs = append(trs, fmt.Sprintf("%s (%s written, %s read)", n,
			human(int64(r.Transports[n]["write"])), human(int64(r.Transports[n]["read"]))))
	}
	if len(trs) == 0 {
		trs = []string{"none (no bytes moved)"}
	}
	fmt.Fprintf(&b, "transport: %s\n", strings.Join(trs, ", "))
	if r.Unlocked {
		fmt.Fprintf(&b, "staging:   unlocked memory (RLIMIT_MEMLOCK too small)\n")
	} else {
		fmt.Fprintf(&b, "staging:   locked in RAM (mlock)\n")
	}
	for _, ph := range []struct {
		name string
		p    Phase
	}{{"put", r.Put}, {"get", r.Get}} {
		fmt.Fprintf(&b, "%s:       %d objects, %s in %.2fs = %s", ph.name, ph.p.Objects, human(ph.p.Bytes),
			ph.p.Elapsed.Seconds(), rate(ph.p.Throughput()))
		if ph.p.Failed > 0 {
			fmt.Fprintf(&b, ", %d FAILED (first: %v)", ph.p.Failed, ph.p.FirstErr)
		}
		b.WriteString("\n")
		if len(ph.p.Stages) > 0 {
			fmt.Fprintf(&b, "  %-24s %10s %10s %10s\n", "stage", "p50", "p90", "p99")
			for _, s := range ph.p.Stages {
				fmt.Fprintf(&b, "  %-24s %10s %10s %10s\n", s.Name, ms(s.P50), ms(s.P90), ms(s.P99))
			}
		}
	}
	switch {
	case r.OK():
		fmt.Fprintf(&b, "verified:  all %d objects, %d bytes identical\n", r.Verified, r.VerifiedBytes)
	default:
		fmt.Fprintf(&b, "verified:  %d of %d objects identical (%d bytes)", r.Verified, r.Objects, r.VerifiedBytes)
		if r.MismatchCount > 0 {
			fmt.Fprintf(&b, "; %d objects DIFFER", r.MismatchCount)
		}
		b.WriteString("\n")
		for _, m := range r.Mismatches {
			fmt.Fprintf(&b, "  object %d (%s): first differing byte at offset %d\n", m.Index, m.Key, m.Offset)
		}
	}
	if r.Deleted > 0 {
		fmt.Fprintf(&b, "cleanup:   deleted %d objects from the store\n", r.Deleted)
	}
	fmt.Fprintf(&b, "total:     %.2fs\n", r.Total.Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}

// percentiles returns the nearest-rank p50, p90 and p99 of d (sorted in
// place).
func percentiles(d []time.Duration) (p50, p90, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.999999) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	return at(0.50), at(0.90), at(0.99)
}

// stageSamples collects one duration per object for each named stage.
type stageSamples struct {
	names []string
	d     [][]time.Duration
}

func newStageSamples(n int, names ...string) *stageSamples {
	s := &stageSamples{names: names, d: make([][]time.Duration, len(names))}
	for i := range s.d {
		s.d[i] = make([]time.Duration, 0, n)
	}
	return s
}

func (s *stageSamples) add(vals ...time.Duration) {
	for i, v := range vals {
		s.d[i] = append(s.d[i], v)
	}
}

func (s *stageSamples) stages() []Stage {
	out := make([]Stage, len(s.names))
	for i, n := range s.names {
		out[i].Name = n
		out[i].P50, out[i].P90, out[i].P99 = percentiles(s.d[i])
	}
	return out
}
