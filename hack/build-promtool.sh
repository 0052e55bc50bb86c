#!/usr/bin/env bash
# Builds promtool (Prometheus' checker of metrics pages and rule files) from
# the Go module proxy into a cache folder keyed by version, and prints the
# binary's path. Only the first run pays; the tests and `make test` use it.
set -euo pipefail

PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}

cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
out="$cache/promtool-${PROMETHEUS_VERSION}"
mkdir -p "$cache"

# --cached: only tell whether the build is done (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  [ -x "$out/promtool" ]
  exit
fi

exec 9>"$cache/promtool.lock"
flock 9

if [ -x "$out/promtool" ]; then
  echo "set-up: promtool (prometheus ${PROMETHEUS_VERSION}): cached in $out" >&2
  echo "$out/promtool"
  exit 0
fi
echo "set-up: building promtool (prometheus ${PROMETHEUS_VERSION}) from the Go module proxy," \
  "once (cached in $cache); about 3-6 minutes on 2 cores ..." >&2

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
# The module's go.mod has no replace directives, so go install takes it as
# is. remove_all_sd leaves out the cloud service discoveries (their SDKs are
# most of the build; checking metrics and rules needs none): half the cost.
GOBIN="$out.tmp" CGO_ENABLED=0 go install -tags remove_all_sd -trimpath -ldflags=-s \
  "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: promtool built in ${SECONDS}s" >&2
echo "$out/promtool"
