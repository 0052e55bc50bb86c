#!/usr/bin/env bash
# Builds one command of Prometheus' module, promtool (the checker of metrics
# pages and rule files) or prometheus (the server the alert gate's tests ask),
# from the Go module proxy into a cache folder keyed by command and version,
# and prints the binary's path. Only the first run pays; the tests and `make
# test` use it (through build-promtool.sh and build-prometheus.sh).
#
#   bash hack/build-prometheus-cmd.sh promtool|prometheus [--cached]
set -euo pipefail

PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
name=${1:-}
case $name in promtool | prometheus) ;; *) echo "usage: $0 promtool|prometheus [--cached]" >&2; exit 2 ;; esac

cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
# The server keeps the Kubernetes discovery (test/cluster scrapes the shipped
# Services through it): its own cache entry, so an older build without it is
# not taken.
tags=remove_all_sd
suffix=
if [ "$name" = prometheus ]; then tags="remove_all_sd enable_kubernetes_sd"; suffix=-k8ssd; fi
out="$cache/${name}-${PROMETHEUS_VERSION}${suffix}"
mkdir -p "$cache"

# --cached: only tell whether the build is done (hack/setup.sh).
if [ "${2:-}" = --cached ]; then
  [ -x "$out/$name" ]
  exit
fi

exec 9>"$cache/${name}.lock"
flock 9

if [ -x "$out/$name" ]; then
  echo "set-up: $name (prometheus ${PROMETHEUS_VERSION}): cached in $out" >&2
  echo "$out/$name"
  exit 0
fi
echo "set-up: building $name (prometheus ${PROMETHEUS_VERSION}) from the Go module proxy," \
  "once (cached in $cache); about 3-6 minutes on 2 cores ..." >&2

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
# The module's go.mod has no replace directives, so go install takes it as
# is. remove_all_sd leaves out the cloud service discoveries (their SDKs are
# most of the build; checking metrics and rules, or scraping a static target
# on loopback, needs none): half the cost; enable_kubernetes_sd puts the
# Kubernetes one back in the server. The server is built without its
# web UI's assets (the builtinassets tag): its API needs none.
GOBIN="$out.tmp" CGO_ENABLED=0 go install -tags "$tags" -trimpath -ldflags=-s \
  "github.com/prometheus/prometheus/cmd/${name}@${PROMETHEUS_VERSION}" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: $name built in ${SECONDS}s" >&2
echo "$out/$name"
