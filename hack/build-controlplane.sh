#!/usr/bin/env bash
# Builds kube-apiserver, kubectl and etcd from the Go module proxy into a cache
# folder keyed by version, and prints that folder. Only the first run pays.
#
# go install refuses both projects (their go.mod files carry replace
# directives), so each is built from a throwaway wrapper module.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=${STAGING_VERSION:-v0.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}

cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
out="$cache/controlplane-k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"
mkdir -p "$cache"

cached() { [ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -x "$out/etcd" ]; }
# --cached: only tell whether the build is done (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  cached
  exit
fi

exec 9>"$cache/controlplane.lock"
flock 9

if cached; then
  echo "set-up: control plane (kube-apiserver, kubectl ${K8S_VERSION}, etcd ${ETCD_VERSION}): cached in $out" >&2
  echo "$out"
  exit 0
fi
echo "set-up: building kube-apiserver and kubectl ${K8S_VERSION} and etcd ${ETCD_VERSION} from the Go module proxy," \
  "once (cached in $cache); about 5-10 minutes on 2 cores ..." >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out.tmp"

# kube-apiserver and kubectl: replace every staging module the kubernetes
# go.mod points at ./staging/... by the published module at STAGING_VERSION.
gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
mkdir -p "$work/k8s"
{
  echo "module nodeconfd.local/k8sbuild"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/.*#\t\1 => \1 '"${STAGING_VERSION}"'#p' "$gomod"
  echo ")"
} >"$work/k8s/go.mod"
echo 'package main' >"$work/k8s/tools.go"
cat >"$work/k8s/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
(
  cd "$work/k8s"
  echo "set-up:   resolving the kubernetes ${K8S_VERSION} modules ..." >&2
  go mod tidy -e >&2 || true
  echo "set-up:   compiling kube-apiserver and kubectl (the longest step) ..." >&2
  CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
  CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl >&2
)

# etcd: a tool dependency of a wrapper module.
mkdir -p "$work/etcd"
(
  cd "$work/etcd"
  go mod init nodeconfd.local/etcdbuild >/dev/null 2>&1
  echo "set-up:   building etcd ${ETCD_VERSION} ..." >&2
  go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
)

rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: control plane built in ${SECONDS}s" >&2
echo "$out"
