//go:build !linux

package fdwait

import (
	"context"
	"errors"
)

// Waiter is not available on this platform.
type Waiter struct{}

// New returns an error: this platform has no supported netpoller wait.
func New(fd int) (*Waiter, error) { return nil, errors.New("fdwait: not supported on this platform") }

// Wait returns ErrClosed.
func (w *Waiter) Wait(ctx context.Context) error { return ErrClosed }

// Close does nothing.
func (w *Waiter) Close() error { return nil }
