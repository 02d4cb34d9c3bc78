package rdma

import "github.com/ferrylabs/ferry/rdma/verbs"

func parseGID(s string) (verbs.GID, error) { return verbs.ParseGID(s) }
