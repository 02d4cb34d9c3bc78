# Ferry's build entry points. `make test` is the whole suite (it installs
# what it needs first); `make demo` runs Ferry's main job.
GO ?= go

.PHONY: all build test bench lint demo proto fuzz

all: build

build:
	$(GO) build ./...
	$(GO) build -o bin/ferry ./cmd/ferry

test:
	./scripts/test.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...

demo:
	$(GO) run ./cmd/ferry demo

proto:
	./scripts/gen-proto.sh
