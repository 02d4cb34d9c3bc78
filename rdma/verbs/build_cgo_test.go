//go:build linux && cgo

package verbs

const cgoBuild = true
