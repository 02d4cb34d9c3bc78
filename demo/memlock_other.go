//go:build !linux

package demo

// canLock is false where staging memory cannot be locked.
func canLock(uint64) bool { return false }

// memlockLimit describes the lock limit for the fallback log line.
func memlockLimit() string { return "not applicable on this platform" }
