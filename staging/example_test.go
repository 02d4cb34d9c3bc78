package staging_test

import (
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/staging"
)

// An offload owner allocates a batch, fills it, starts the lease when it
// answers the requester, and frees it on release (or expiry).
func Example() {
	a, err := staging.New(staging.Options{Size: 1 << 20, Unlocked: true, SweepInterval: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	// Register a.Bytes() at a.Addr() with every transport here.

	l, err := a.AllocLease([]uint64{1000, 5000})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range l.Slots() {
		copy(s.Bytes(), "object bytes") // e.g. io.ReadFull(resp.Body, s.Bytes())
	}
	_ = l.Start(5 * time.Second) // the requester has 5 s to read the slots
	fmt.Println("batch", l.ID(), "slots", len(l.Slots()), "aligned", l.Slots()[1].Addr()%staging.PageSize == 0)

	// The requester's ReleaseOffloadBuffer(batch id):
	fmt.Println(a.ReleaseLease(l.ID()), a.Outstanding())
	// Output:
	// batch 1 slots 2 aligned true
	// <nil> 0
}
