# nodeconfd: build, demo, tests. `make demo` and `make test` do all set-up on a
# fresh Debian machine (as root); the builds they need are cached in
# ~/.cache/nodeconfd so only the first run pays.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
export GOTOOLCHAIN ?= auto
GO ?= go
# The release: `nodeconfd version` reports it and the DaemonSet's image tag is it.
VERSION ?= $(shell cat VERSION)
OUT ?= bin/nodeconfd
# The commit, in nodeconfd_build_info and the start line (empty outside a git checkout).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: all build image push release registry kured deps controlplane nodeimage nodestack nodeimage-kube promtool prometheus demo test test-unit test-e2e bench bench-fleet fuzz crds fmt vet

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION) -X main.revision=$(REVISION)" -o $(OUT) ./cmd/nodeconfd

# The release image without a container engine (hack/buildimage, docs/image.md):
# linux/amd64 and linux/arm64 in one OCI image index named
# $(IMAGE_REPO):$(VERSION), written as an OCI layout tar at IMAGE_ARCHIVE.
# `make push` pushes it to IMAGE_REPO's registry as well (go-containerregistry;
# credentials from `docker login`'s config). Reproducible: one commit, one
# digest (SOURCE_DATE_EPOCH defaults to its time).
IMAGE_REPO ?= quay.io/nodeconfd/nodeconfd
IMAGE_ARCHIVE ?= bin/nodeconfd-image.tar
IMAGE_ARCHES ?= amd64,arm64
image:
	$(GO) run ./hack/buildimage -out $(IMAGE_ARCHIVE) -repo $(IMAGE_REPO) -version $(VERSION) -arch $(IMAGE_ARCHES)

push:
	$(GO) run ./hack/buildimage -out $(IMAGE_ARCHIVE) -repo $(IMAGE_REPO) -version $(VERSION) -arch $(IMAGE_ARCHES) -push

# The release manifest (hack/release): manifests/ as one YAML, running
# $(IMAGE_REPO):$(VERSION). Installing is `kubectl apply -f $(RELEASE)`.
RELEASE ?= bin/nodeconfd-$(VERSION).yaml
release:
	$(GO) run ./hack/release -image $(IMAGE_REPO):$(VERSION) -version $(VERSION) -out $(RELEASE)

deps:
	bash hack/install-deps.sh

controlplane: deps
	bash hack/build-controlplane.sh >/dev/null

nodeimage: deps
	bash hack/node-image.sh >/dev/null

# The real nodes of test/cluster: kubelet, kube-scheduler,
# kube-controller-manager and containerd built from their modules (cold:
# about 25 minutes on 2 busy cores), and the node image with Debian's runc
# and CNI plugins.
nodestack: deps
	bash hack/build-nodestack.sh >/dev/null

nodeimage-kube: deps
	bash hack/node-image-kube.sh >/dev/null

# The OCI registry test/cluster and the demo push the image to and the real
# nodes pull it from (CNCF Distribution, built from its module).
registry:
	bash hack/build-registry.sh >/dev/null

# kured, which `make bench` runs beside nodeconfd's reboot on request
# (test/bench/kured, docs/kured.md), built from a git repository of it
# (KURED_GIT): it is not on the Go module proxy.
kured:
	bash hack/build-kured.sh >/dev/null

# promtool checks the daemon's /metrics and the alert rules in the tests.
promtool:
	bash hack/build-promtool.sh >/dev/null

# The Prometheus server the alert gate's e2e tests ask.
prometheus:
	bash hack/build-prometheus.sh >/dev/null

crds:
	$(GO) run ./hack/gencrds

# Runs the product as its users run it (test/demo): a local control plane
# with the scheduler and the controller manager, manifests/ applied as
# shipped, one real node whose kubelet and containerd run the DaemonSet's
# pod, two updates (a CRI-O reload; a drain and reboot), kubectl logs.
# hack/setup.sh builds what it needs, once: cold, about 50 minutes on 2
# cores, saying at each minute what it builds and about how long is left.
demo:
	bash hack/setup.sh deps controlplane nodeimage nodestack nodeimage-kube registry demo
	./bin/nodeconfd-demo

# Unit tests: no root, no control plane, no nodes.
test-unit:
	$(GO) test -count=1 ./phases/... ./daemon/... ./cmd/... ./hack/release/

# Every test, on the real parts (root, control plane, systemd nodes). The
# e2e tests run side by side on one test bed, E2E_PARALLEL at once (see
# test/e2e/main_test.go): they mostly wait on their nodes (reboots, leases,
# windows), each node a systemd container with its daemon (under 100 MB and
# about 7 inotify instances). The e2e package, the longest, is listed first so
# that go test starts it first.
E2E_PARALLEL ?= 16
test:
	bash hack/setup.sh deps controlplane nodeimage nodestack nodeimage-kube registry promtool prometheus
	$(MAKE) build
	bash hack/check-tracked-sizes.sh
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 45m -p 2 -parallel $(E2E_PARALLEL) ./test/e2e/ ./...
	$(FUZZ) -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME) ./test/fuzz/
	$(FUZZ) -fuzz '^FuzzApplyFields$$' -fuzztime $(FUZZTIME) ./test/fuzz/
	$(BENCH_SMOKE) ./phases/plan/ ./daemon/hostfs/ ./test/bench/
	$(BENCH_SMOKE) ./test/fleet/ -args -fleet.nodes=4 -fleet.max-unavailable=2 -fleet.idle=3s -fleet.restart-settle=3s \
		-fleet.start-jitter=1s -fleet.update-spread=0s

# Every benchmark once, small (NODECONFD_BENCH_SMOKE: short idles, no
# kubectl drain beside ours, small namespaces and fleet), so that none rots
# between two `make bench` runs; its figures are not measurements.
BENCH_SMOKE = NODECONFD_BENCH_SMOKE=1 $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 15m

# Fuzz targets (test/fuzz): `make test` runs each for FUZZTIME; `make fuzz`
# for FUZZTIME_LONG. A failing input is saved under test/fuzz/testdata/fuzz/.
# The temporary nodes go to a tmpfs (FUZZ_TMPDIR): the fuzzed writes fsync.
# The budgets are counts of runs, not durations: Go 1.26's fuzzing coordinator
# can fail a target with a bare "context deadline exceeded" when a duration
# ends while a worker is busy (golang/go#75804, fixed in Go 1.27), which it did
# in CI with no failing input. A count has no deadline to race. 8,000 runs take
# 20 to 40 s here; the test timeout bounds a slow machine.
FUZZTIME ?= 8000x
FUZZTIME_LONG ?= 60000x
FUZZ_TMPDIR ?= /dev/shm
FUZZ = TMPDIR=$(FUZZ_TMPDIR) $(GO) test -run '^$$' -timeout 20m -fuzzminimizetime 200x
fuzz:
	$(FUZZ) -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME_LONG) ./test/fuzz/
	$(FUZZ) -fuzz '^FuzzApplyFields$$' -fuzztime $(FUZZTIME_LONG) ./test/fuzz/

bench: deps controlplane nodeimage nodestack nodeimage-kube registry build
	$(GO) test -run '^$$' -bench . -benchtime 5x -timeout 30m ./phases/plan/ ./daemon/hostfs/ ./test/bench/
	$(KURED_BENCH)
	$(FLEET_BENCH) -timeout 15m ./test/fleet/ -args -fleet.nodes=20 -fleet.idle=20s -fleet.restart-settle=10s

# nodeconfd's reboot on request beside kured on three real nodes, once: it
# takes about 10 minutes (docs/kured.md). It builds kured first (`make
# kured`), and skips, saying why, where no git repository of kured is at
# hand. Not in `make test`: its smoke run lists test/bench alone.
KURED_BENCH = $(GO) test -run '^$$' -bench '^BenchmarkRebootVsKured$$' -benchtime 1x -timeout 40m ./test/bench/kured/

# A fleet of N simulated daemons on the test bed's real
# kube-apiserver and etcd: start-up storm, idle, one node's update, a rolling
# update paced by `nodeconfd controller` at the worker pool's maxUnavailable S, an API
# server restart (test/fleet, docs/fleet.md). `make bench-fleet N=1000 S=10`. SPREAD is the
# daemons' --update-spread: off here, since its default (100ms) puts off every handoff by up to
# (N-1) x 100 ms, about 90 min for a roll at N=1000 (docs/fleet.md); SPREAD=100ms measures that.
N ?= 100
S ?= 10
SPREAD ?= 0
IDLE ?= 60s
ROLL ?= true
FLEET_TIMEOUT ?= 60m
FLEET_BENCH = $(GO) test -run '^$$' -bench '^BenchmarkFleet$$' -benchtime 1x
bench-fleet: deps controlplane build
	$(FLEET_BENCH) -timeout $(FLEET_TIMEOUT) ./test/fleet/ -args -fleet.nodes=$(N) \
		-fleet.max-unavailable=$(S) -fleet.update-spread=$(SPREAD) -fleet.idle=$(IDLE) -fleet.roll=$(ROLL) \
		-fleet.timeout=$(FLEET_TIMEOUT)
