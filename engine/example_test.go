package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/engine"
	"github.com/ferrylabs/ferry/staging"
	"github.com/ferrylabs/ferry/transport"
)

// Two engines in one process: the target registers pinned memory, the
// initiator opens the target's segment by name and writes, then reads
// back. Across machines the only difference is that the initiator learns
// the target's segment name ("host:port") out of band.
func Example() {
	target, err := engine.New(engine.Config{LocalServerName: "127.0.0.1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer target.Close()
	initiator, err := engine.New(engine.Config{LocalServerName: "127.0.0.1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer initiator.Close()

	// Memory a transport may touch must be registered; staging arenas are
	// pinned (or, with Unlocked, plain mmap memory for TCP-only setups).
	remote, err := staging.New(staging.Options{Size: 1 << 20, Unlocked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer remote.Close()
	local, err := staging.New(staging.Options{Size: 1 << 20, Unlocked: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer local.Close()
	if err := target.RegisterMemory(remote.Bytes(), "cpu:0", true); err != nil {
		fmt.Println(err)
		return
	}
	defer target.UnregisterMemory(remote.Bytes())
	if err := initiator.RegisterMemory(local.Bytes(), "cpu:0", false); err != nil {
		fmt.Println(err)
		return
	}
	defer initiator.UnregisterMemory(local.Bytes())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seg, err := initiator.OpenSegment(ctx, target.Name())
	if err != nil {
		fmt.Println(err)
		return
	}
	src, dst := local.Bytes()[:4096], local.Bytes()[4096:8192]
	copy(src, bytes.Repeat([]byte("kv"), 2048))
	// Transfer blocks until every request is done. If ctx ends first, it
	// cancels them and returns only when no transport touches src or dst
	// any more.
	err = initiator.Transfer(ctx, []engine.Request{
		{Op: transport.Write, Local: engine.Addr(src), Target: seg, TargetAddr: remote.Addr(), Length: 4096},
	})
	if err == nil {
		err = initiator.Transfer(ctx, []engine.Request{
			{Op: transport.Read, Local: engine.Addr(dst), Target: seg, TargetAddr: remote.Addr(), Length: 4096},
		})
	}
	fmt.Println(err, bytes.Equal(src, dst))
	// Output:
	// <nil> true
}
