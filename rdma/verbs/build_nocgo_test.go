//go:build !linux || !cgo

package verbs

const cgoBuild = false
