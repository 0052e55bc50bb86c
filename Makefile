# nodeconfd: build, demo, tests. `make demo` and `make test` do all set-up on a
# fresh Debian machine (as root); the builds they need are cached in
# ~/.cache/nodeconfd so only the first run pays.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
export GOTOOLCHAIN ?= auto
GO ?= go

.PHONY: all build deps controlplane nodeimage demo test test-unit test-e2e bench crds fmt vet

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/nodeconfd ./cmd/nodeconfd

deps:
	bash hack/install-deps.sh

controlplane: deps
	bash hack/build-controlplane.sh >/dev/null

nodeimage: deps
	bash hack/node-image.sh >/dev/null

crds:
	$(GO) run ./hack/gencrds

# Runs the product on its embedded default: a local control plane, one systemd
# node and the daemon, rolling out two configs while printing the status.
demo: deps controlplane nodeimage build
	$(GO) run ./test/demo

# Unit tests: no root, no control plane, no nodes.
test-unit:
	$(GO) test -count=1 ./phases/... ./daemon/... ./cmd/...

# Every test, on the real parts (root, control plane, systemd nodes).
test: deps controlplane nodeimage build
	bash hack/check-tracked-sizes.sh
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 45m -p 2 ./...

bench: deps controlplane nodeimage build
	$(GO) test -run '^$$' -bench . -benchtime 5x -timeout 30m ./daemon/hostfs/ ./test/bench/
