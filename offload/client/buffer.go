package client

import (
	"errors"
	"fmt"

	"github.com/ferrylabs/ferry/staging"
)

// Registrar registers memory with a transfer engine; *engine.Engine
// implements it.
type Registrar interface {
	RegisterMemory(mem []byte, location string, remoteAccessible bool) error
	UnregisterMemory(mem []byte) error
}

// Buffer is a staging arena registered with the requester's engine, from
// which Get destinations and Put sources can be carved. Slots are
// 4 KiB-aligned and stay valid until freed or until Close.
type Buffer struct {
	arena *staging.Arena
	eng   Registrar
}

// NewBuffer maps an arena of size bytes and registers it with eng.
// unlocked skips mlock (for tests without CAP_IPC_LOCK or a large
// RLIMIT_MEMLOCK).
func NewBuffer(eng Registrar, size int64, unlocked bool) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: buffer size %d", ErrInvalidArgument, size)
	}
	a, err := staging.New(staging.Options{Size: uint64(size), Unlocked: unlocked, Name: "requester"})
	if err != nil {
		return nil, fmt.Errorf("requester buffer: %w", err)
	}
	if err := eng.RegisterMemory(a.Bytes(), "*", true); err != nil {
		a.ForceClose()
		return nil, fmt.Errorf("register requester buffer: %w", err)
	}
	return &Buffer{arena: a, eng: eng}, nil
}

// Alloc returns n bytes of registered memory (the slot's Bytes). The
// memory is not zeroed. It fails wrapping staging.ErrNoSpace when full.
func (b *Buffer) Alloc(n int64) (staging.Slot, error) {
	if n < 0 {
		return staging.Slot{}, fmt.Errorf("%w: size %d", ErrInvalidArgument, n)
	}
	return b.arena.Alloc(uint64(max(n, 1)))
}

// Free returns a slot from Alloc. Its bytes must not be used afterwards.
func (b *Buffer) Free(s staging.Slot) error { return b.arena.Free(s) }

// Bytes is the whole registered arena.
func (b *Buffer) Bytes() []byte { return b.arena.Bytes() }

// Close unregisters and unmaps the arena, even with slots outstanding:
// the caller asserts no transfer uses them. It is idempotent.
func (b *Buffer) Close() error {
	if b.eng == nil {
		return nil
	}
	err := b.eng.UnregisterMemory(b.arena.Bytes())
	b.eng = nil
	return errors.Join(err, b.arena.ForceClose())
}
