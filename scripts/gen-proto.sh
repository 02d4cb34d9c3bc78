#!/usr/bin/env bash
# Regenerates the Go code of Ferry's protobuf definitions (offload/proto).
# Installs protoc from Debian (protobuf-compiler) when it is missing and we
# are root, and the Go plugins at pinned versions. Usage: make proto
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep PROTOC_GEN_GO in step with google.golang.org/protobuf in go.mod.
PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.5.1

if ! command -v protoc >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "==> installing protobuf-compiler"
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
	else
		echo "protoc is missing: sudo apt-get install -y protobuf-compiler" >&2
		exit 1
	fi
fi

bin=$(go env GOPATH)/bin
echo "==> installing protoc-gen-go $PROTOC_GEN_GO, protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC"
GOBIN=$bin go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
GOBIN=$bin go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
export PATH="$bin:$PATH"

echo "==> protoc $(protoc --version)"
protos=$(find offload/proto -name '*.proto' | sort)
protoc -I offload/proto \
	--go_out=offload/proto --go_opt=paths=source_relative \
	--go-grpc_out=offload/proto --go-grpc_opt=paths=source_relative \
	$protos
gofmt -w offload/proto
echo "==> generated: $(find offload/proto -name '*.pb.go' | sort | tr '\n' ' ')"
