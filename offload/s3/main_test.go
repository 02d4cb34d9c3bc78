package s3

import (
	"testing"

	"github.com/ferrylabs/ferry/offload/objstore/objtest"
)

func TestMain(m *testing.M) { objtest.LoopbackTestMain(m) }
