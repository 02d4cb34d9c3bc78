//go:build !linux && unix

package fakeverbs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// notifier is a level-triggered wakeup fd (a pipe holding 0 or 1 byte).
type notifier struct{ fd, w int }

func newNotifier() (notifier, error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return notifier{fd: -1, w: -1}, fmt.Errorf("fakeverbs: pipe: %w", err)
	}
	unix.SetNonblock(p[0], true)
	unix.SetNonblock(p[1], true)
	return notifier{fd: p[0], w: p[1]}, nil
}

func (n notifier) set() {
	var b [1]byte
	_, _ = unix.Write(n.w, b[:])
}

func (n notifier) clear() {
	var b [16]byte
	_, _ = unix.Read(n.fd, b[:])
}

func (n notifier) close() {
	_ = unix.Close(n.fd)
	_ = unix.Close(n.w)
}
