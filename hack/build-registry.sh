#!/usr/bin/env bash
# Builds the OCI registry of the test bed (test/cluster, the demo): the
# CNCF Distribution registry (github.com/distribution/distribution/v3,
# cmd/registry, the registry Docker Hub and Harbor run), from the Go module
# proxy into a cache folder keyed by version, and prints the binary's path.
# Only the first run pays.
#
#   bash hack/build-registry.sh [--cached]
set -euo pipefail

REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
out="$cache/registry-${REGISTRY_VERSION}"
mkdir -p "$cache"

# --cached: only tell whether the build is done (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  [ -x "$out/registry" ]
  exit
fi

exec 9>"$cache/registry.lock"
flock 9

if [ -x "$out/registry" ]; then
  echo "set-up: registry (distribution ${REGISTRY_VERSION}): cached in $out" >&2
  echo "$out/registry"
  exit 0
fi
echo "set-up: building the registry (distribution ${REGISTRY_VERSION}) from the Go module proxy," \
  "once (cached in $cache); about 4-8 minutes on 2 cores ..." >&2

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
# The module's go.mod has no replace directives, so go install takes it as
# is. Its command links every storage driver (S3, GCS, Azure: most of the
# build); the bed uses the filesystem one.
GOBIN="$out.tmp" CGO_ENABLED=0 go install -trimpath -ldflags=-s \
  "github.com/distribution/distribution/v3/cmd/registry@${REGISTRY_VERSION}" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: registry built in ${SECONDS}s" >&2
echo "$out/registry"
