package verbs

import "fmt"

// checkWRs validates a batch before it reaches a provider: it returns the
// index of the first malformed request and an ErrInvalidArgument naming
// the field, or (len(wrs), nil). Providers call it; it allocates only on
// error.
func checkWRs(wrs []WorkRequest) (int, error) {
	for i := range wrs {
		w := &wrs[i]
		if w.Op != OpRead && w.Op != OpWrite {
			return i, fmt.Errorf("%w: work request %d (wrid %d): op %v", ErrInvalidArgument, i, w.WRID, w.Op)
		}
		if w.Length == 0 {
			return i, fmt.Errorf("%w: work request %d (wrid %d): zero length", ErrInvalidArgument, i, w.WRID)
		}
	}
	return len(wrs), nil
}

// CheckWorkRequests is checkWRs for other providers (rdma/fakeverbs).
func CheckWorkRequests(wrs []WorkRequest) (int, error) { return checkWRs(wrs) }
