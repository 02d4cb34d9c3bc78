#!/usr/bin/env bash
# Runs Ferry's whole test suite on a fresh Debian machine with Go:
# installs what the tests need, starts a real S3 server (versitygw) on
# loopback, then runs vet, gofmt, the tests under -race, a cgocheck2 pass
# over the verbs layer and short fuzz runs. Usage: make test
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Fuzz budgets are execution counts, not durations: a duration-based
# -fuzztime can end in a spurious "context deadline exceeded" on a loaded
# machine (go.dev/issue/75804, fixed only in Go 1.27).
FUZZTIME=${FUZZTIME:-5000x}
PEERS=${FERRY_PEERS_DIR:-$root/.cache/peers}
mkdir -p "$PEERS/bin"

say() { printf '==> %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------
need_pkgs=()
for p in libibverbs-dev iproute2 gcc redis-server; do
	dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing ${need_pkgs[*]}"
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
	else
		echo "missing Debian packages: ${need_pkgs[*]}" >&2
		echo "install them with: sudo apt-get install -y ${need_pkgs[*]}" >&2
		exit 1
	fi
fi

# --- Go modules --------------------------------------------------------------
say "downloading Go modules"
go mod download

# --- the S3 peer -------------------------------------------------------------
VGW=$PEERS/bin/versitygw
if [ ! -x "$VGW" ]; then
	say "building versitygw (S3 server that verifies SigV4)"
	GOFLAGS="-p=2" GOBIN=$PEERS/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
fi
vgw_data=$(mktemp -d)
vgw_port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])' 2>/dev/null || echo 17070)
ROOT_ACCESS_KEY=testak ROOT_SECRET_KEY=testsecret "$VGW" --port "127.0.0.1:$vgw_port" --quiet posix "$vgw_data" >"$vgw_data.log" 2>&1 &
vgw_pid=$!
cleanup() {
	kill "$vgw_pid" 2>/dev/null || true
	wait "$vgw_pid" 2>/dev/null || true
	rm -rf "$vgw_data" "$vgw_data.log"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$vgw_port") 2>/dev/null; then break; fi
	sleep 0.1
done
export FERRY_TEST_S3_ENDPOINT="http://127.0.0.1:$vgw_port"
export FERRY_TEST_S3_ACCESS_KEY=testak
export FERRY_TEST_S3_SECRET_KEY=testsecret
export FERRY_TEST_S3_REGION=us-east-1
say "versitygw on $FERRY_TEST_S3_ENDPOINT"

# --- static checks -----------------------------------------------------------
say "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
say "go vet"
go vet ./...
say "CGO_ENABLED=0 build"
CGO_ENABLED=0 go build ./...

# --- tests -------------------------------------------------------------------
say "go test -race"
go test -race -count=1 -timeout 30m ./...

say "verbs layer under GOEXPERIMENT=cgocheck2"
GOEXPERIMENT=cgocheck2 go test -count=1 ./rdma/verbs/...
say "verbs stub contract (CGO_ENABLED=0)"
CGO_ENABLED=0 go test -count=1 ./rdma/verbs/... ./rdma/fakeverbs/...

# --- fuzzing (bounded) -------------------------------------------------------
say "fuzz targets, $FUZZTIME executions each"
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		say "fuzz $pkg $target"
		go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" -timeout 5m "$pkg"
	done
done
say "all tests passed"
