//go:build !linux

package verbs

func checkUverbs() error { return ErrNotSupported }

func memlockLimit() (uint64, bool, error) { return 0, false, ErrNotSupported }
