//go:build linux

package fakeverbs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// notifier is a level-triggered wakeup fd: readable while set.
type notifier struct{ fd int }

func newNotifier() (notifier, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return notifier{fd: -1}, fmt.Errorf("fakeverbs: eventfd: %w", err)
	}
	return notifier{fd: fd}, nil
}

// set makes the fd readable. The caller serialises set and clear.
func (n notifier) set() {
	var one = [8]byte{1}
	_, _ = unix.Write(n.fd, one[:])
}

// clear drains the fd so it is no longer readable.
func (n notifier) clear() {
	var buf [8]byte
	_, _ = unix.Read(n.fd, buf[:])
}

func (n notifier) close() { _ = unix.Close(n.fd) }
