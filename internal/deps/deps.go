//go:build ferry_deps

// Package deps pins the project's dependencies while packages are being
// written; it is never built.
package deps

import (
	_ "github.com/Mellanox/rdmamap"
	_ "github.com/aliyun/alibabacloud-oss-go-sdk-v2/oss/signer"
	_ "github.com/johannesboyne/gofakes3"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/vishvananda/netlink"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
)
