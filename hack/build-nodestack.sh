#!/usr/bin/env bash
# Builds the node stack of the test bed's real nodes from the Go module proxy
# into a cache folder keyed by version, and prints that folder. Only the first
# run pays. Beside the control plane of hack/build-controlplane.sh (same
# kubernetes version), it holds:
#   kube-scheduler, kube-controller-manager  (run beside kube-apiserver)
#   kubelet                                   (run inside each node)
#   containerd, containerd-shim-runc-v2, ctr  (the container runtime in each node)
# kubernetes 1.37 needs containerd 2.3 or later (containerd's RELEASES.md),
# newer than Debian's packages, so containerd is built from its module too.
# runc comes from Debian (it needs cgo and libseccomp).
#
# A folder of its own, so that this build never invalidates the control
# plane's cache key.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=${STAGING_VERSION:-v0.37.2}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}

cache=${NODECONFD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodeconfd}
out="$cache/nodestack-k8s-${K8S_VERSION}-containerd-${CONTAINERD_VERSION}"
bins=(kube-scheduler kube-controller-manager kubelet containerd containerd-shim-runc-v2 ctr)
mkdir -p "$cache"

complete() {
  local b
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
}
# --cached: only tell whether the build is done (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  complete
  exit
fi

exec 9>"$cache/nodestack.lock"
flock 9

if complete; then
  echo "set-up: node stack (kubelet, kube-scheduler, kube-controller-manager ${K8S_VERSION}, containerd ${CONTAINERD_VERSION}): cached in $out" >&2
  echo "$out"
  exit 0
fi
echo "set-up: building kubelet, kube-scheduler and kube-controller-manager ${K8S_VERSION} and containerd" \
  "${CONTAINERD_VERSION} from the Go module proxy, once (cached in $cache); 15-40 minutes on 2 cores (38 measured beside other builds) ..." >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A partial earlier run keeps what it finished.
mkdir -p "$out.tmp"

# build DIR OUT PKG [go build flags...] builds PKG in module DIR unless done.
build() {
  local dir=$1 name=$2 pkg=$3
  shift 3
  if [ -x "$out.tmp/$name" ]; then
    return
  fi
  echo "set-up:   compiling $name (${SECONDS}s so far) ..." >&2
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath "$@" -o "$out.tmp/$name.part" "$pkg" >&2)
  mv "$out.tmp/$name.part" "$out.tmp/$name"
}

# containerd: a tool dependency of a wrapper module (its go.mod has no
# replace directives, but go install cannot set build tags per binary).
mkdir -p "$work/containerd"
(
  cd "$work/containerd"
  go mod init nodeconfd.local/containerdbuild >/dev/null 2>&1
  echo "set-up:   resolving containerd ${CONTAINERD_VERSION} ..." >&2
  go get -tool "github.com/containerd/containerd/v2/cmd/containerd@${CONTAINERD_VERSION}" >&2
  go get -tool "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@${CONTAINERD_VERSION}" >&2
  go get -tool "github.com/containerd/containerd/v2/cmd/ctr@${CONTAINERD_VERSION}" >&2
)
version="-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}"
build "$work/containerd" containerd github.com/containerd/containerd/v2/cmd/containerd \
  -tags "urfave_cli_no_docs no_btrfs no_devmapper no_zfs osusergo netgo" -ldflags "-s $version"
build "$work/containerd" containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  -tags "urfave_cli_no_docs no_grpc osusergo netgo" -ldflags "-s $version"
build "$work/containerd" ctr github.com/containerd/containerd/v2/cmd/ctr \
  -tags "urfave_cli_no_docs osusergo netgo" -ldflags "-s $version"

# kubernetes: as in build-controlplane.sh, every staging module the
# kubernetes go.mod points at ./staging/... is replaced by the published
# module at STAGING_VERSION.
gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
mkdir -p "$work/k8s"
{
  echo "module nodeconfd.local/k8snodebuild"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes ${K8S_VERSION}"
  echo
  echo "replace ("
  sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/.*#\t\1 => \1 '"${STAGING_VERSION}"'#p' "$gomod"
  echo ")"
} >"$work/k8s/go.mod"
cat >"$work/k8s/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
(
  cd "$work/k8s"
  echo "set-up:   resolving the kubernetes ${K8S_VERSION} modules ..." >&2
  go mod tidy -e >&2 || true
)
# Without it the binaries report v0.0.0-master, and so would the node.
k8sversion="-X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
for name in kube-scheduler kube-controller-manager kubelet; do
  build "$work/k8s" "$name" "k8s.io/kubernetes/cmd/$name" -ldflags "-s $k8sversion"
done

rm -rf "$out"
mv "$out.tmp" "$out"
echo "set-up: node stack built in ${SECONDS}s" >&2
echo "$out"
