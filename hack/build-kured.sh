#!/usr/bin/env bash
# Builds kured (kubereboot/kured, cmd/kured), the reboot daemon that
# test/bench's BenchmarkRebootVsKured runs beside nodeconfd's reboot on
# request (docs/kured.md). kured's module is not on the Go module proxy, so
# its source comes from a git repository of it: KURED_GIT (a clone or bare
# git folder; default: the workplace's mirror), checked out at the tag
# KURED_VERSION into the cache, outside this repository; its dependencies
# come from the module proxy. Prints the binary's path. Only the first run
# pays. Nothing of kured is kept in this repository.
#
#   bash hack/build-kured.sh [--cached]
#
# Exits 3, saying so, when KURED_GIT has no tag KURED_VERSION (the
# benchmark then skips).
set -euo pipefail

KURED_VERSION=${KURED_VERSION:-1.23.0}
KURED_GIT=${KURED_GIT:-/work/.mirror/kubereboot+kured/repo}
cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
out="$cache/kured-${KURED_VERSION}"
src="$cache/kured-src-${KURED_VERSION}"
mkdir -p "$cache"

# --cached: only tell whether the build is done.
if [ "${1:-}" = --cached ]; then
  [ -x "$out/kured" ]
  exit
fi

exec 9>"$cache/kured.lock"
flock 9

if [ -x "$out/kured" ]; then
  echo "set-up: kured ${KURED_VERSION}: cached in $out" >&2
  echo "$out/kured"
  exit 0
fi
if ! git --git-dir="$KURED_GIT" rev-parse -q --verify "refs/tags/${KURED_VERSION}^{commit}" >/dev/null 2>&1 &&
  ! git --git-dir="$KURED_GIT/.git" rev-parse -q --verify "refs/tags/${KURED_VERSION}^{commit}" >/dev/null 2>&1; then
  echo "set-up: no kured ${KURED_VERSION} in KURED_GIT=$KURED_GIT: set KURED_GIT to a clone of" \
    "github.com/kubereboot/kured" >&2
  exit 3
fi
gitdir=$KURED_GIT
[ -d "$KURED_GIT/.git" ] && gitdir="$KURED_GIT/.git"
echo "set-up: building kured ${KURED_VERSION} from $KURED_GIT, once (cached in $cache);" \
  "about 3-5 minutes on 2 cores ..." >&2

rm -rf "$src" "$out.tmp"
mkdir -p "$src" "$out.tmp"
git --git-dir="$gitdir" archive "${KURED_VERSION}" | tar -x -C "$src"
# As kured's release builds it (.config/goreleaser.yaml): static, its
# version stamped in.
(cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -X main.version=${KURED_VERSION}" \
  -o "$out.tmp/kured" ./cmd/kured) >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: kured built in ${SECONDS}s" >&2
echo "$out/kured"
