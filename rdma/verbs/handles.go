package verbs

import "sync/atomic"

var liveHandles atomic.Int64

// LiveHandles returns how many handles (devices, PDs, MRs, CQs, channels,
// QPs) of the System provider are open. Tests check it is zero at the end
// to catch leaks.
func LiveHandles() int { return int(liveHandles.Load()) }
