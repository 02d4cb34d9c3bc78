//go:build !unix

package rdma

// processCPU is not available here.
func processCPU() int64 { return -1 }
