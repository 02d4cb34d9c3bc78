package bench

import (
	"errors"
	"log/slog"

	"github.com/ferrylabs/ferry/staging"
)

// Buffer is the benchmark's registered memory: a staging arena (mmap,
// MADV_DONTFORK, mlock). Bytes is valid until Close.
type Buffer struct {
	arena *staging.Arena
	// Bytes is the whole buffer.
	Bytes []byte
	// Pinned reports whether the memory is locked in RAM.
	Pinned bool
}

// NewBuffer maps size bytes of pinned memory. When the memlock limit is too
// low it falls back to unlocked memory (fine for TCP, not for RDMA) and
// logs why.
func NewBuffer(size uint64, log *slog.Logger) (*Buffer, error) {
	a, err := staging.New(staging.Options{Size: size, Name: "bench", Logger: log})
	if err != nil {
		var me *staging.MemlockError
		if !errors.As(err, &me) {
			return nil, err
		}
		log.Warn("bench buffer not pinned: memlock limit too low; results for RDMA would be invalid", "err", err)
		a, err = staging.New(staging.Options{Size: size, Name: "bench", Logger: log, Unlocked: true})
		if err != nil {
			return nil, err
		}
	}
	return &Buffer{arena: a, Bytes: a.Bytes()[:size:size], Pinned: a.Pinned()}, nil
}

// Close unmaps the buffer; it must be unregistered first.
func (b *Buffer) Close() error {
	if b == nil || b.arena == nil {
		return nil
	}
	err := b.arena.ForceClose()
	b.arena = nil
	return err
}
