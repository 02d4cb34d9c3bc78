package client

import (
	"slices"
	"time"
)

// StageStats are percentiles of one stage over many results.
type StageStats struct {
	P50, P90, P99, Max time.Duration
}

// Summary holds per-stage percentiles of successful results.
type Summary struct {
	// N is the number of successful results summarised.
	N                                      int
	Master, Owner, Transfer, Commit, Total StageStats
}

// Summarize computes per-stage percentiles over the successful results
// (failed ones are skipped), e.g. for a demo's latency table.
func Summarize(results []Result) Summary {
	var ok []Timings
	for _, r := range results {
		if r.Err == nil {
			ok = append(ok, r.Timings)
		}
	}
	stage := func(get func(Timings) time.Duration) StageStats {
		if len(ok) == 0 {
			return StageStats{}
		}
		v := make([]time.Duration, len(ok))
		for i, t := range ok {
			v[i] = get(t)
		}
		slices.Sort(v)
		at := func(p float64) time.Duration { return v[min(len(v)-1, int(p*float64(len(v))))] }
		return StageStats{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[len(v)-1]}
	}
	return Summary{
		N:        len(ok),
		Master:   stage(func(t Timings) time.Duration { return t.Master }),
		Owner:    stage(func(t Timings) time.Duration { return t.Owner }),
		Transfer: stage(func(t Timings) time.Duration { return t.Transfer }),
		Commit:   stage(func(t Timings) time.Duration { return t.Commit }),
		Total:    stage(func(t Timings) time.Duration { return t.Total }),
	}
}
