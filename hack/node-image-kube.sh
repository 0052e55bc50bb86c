#!/usr/bin/env bash
# Builds, once, the root filesystem of the test bed's real nodes (a kubelet
# and containerd inside, see test/testbed/kubenode) on top of the node image
# of hack/node-image.sh, and prints its folder. It adds Debian's runc, CNI
# plugins (bridge, host-local, loopback), nftables and iproute2, and drops
# the stand-in kubelet.service (each node gets the real one). The kubelet and
# containerd themselves come from hack/build-nodestack.sh and are bound in
# when a node starts, so rebuilding them does not rebuild this image.
set -euo pipefail

# Bump when anything below the cache check changes what ends up in the image.
RECIPE_VERSION=1
PACKAGES=(runc containernetworking-plugins nftables iproute2)

cache=${NODECONFD_CACHE:-$HOME/.cache/nodeconfd}
# --cached: only tell whether the build (and the node image under it) is
# done (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  base=$(bash "$(dirname "$0")/node-image.sh" --cached) || exit 1
  [ -f "$cache/$(basename "$base")-kube-v$RECIPE_VERSION/.nodeimage-complete" ]
  exit
fi
base=$(bash "$(dirname "$0")/node-image.sh")
out="$cache/$(basename "$base")-kube-v$RECIPE_VERSION"

exec 9>"$cache/nodeimage-kube.lock"
flock 9

if [ -f "$out/.nodeimage-complete" ]; then
  echo "set-up: real-node image (node image with runc, CNI plugins, nftables): cached in $out" >&2
  echo "$out"
  exit 0
fi
echo "set-up: building the real-node image (Debian's runc, CNI plugins, nftables on the node image)," \
  "once (cached in $cache); about a minute ..." >&2

rm -rf --one-file-system "$out".tmp.*
tmp=$(mktemp -d "$out.tmp.XXXXXX")
cleanup() {
  for m in dev proc; do umount "$tmp/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
cp -a "$base/." "$tmp/"
rm -f "$tmp/.nodeimage-complete"

# apt in a chroot: the host's DNS, /proc and /dev for the maintainer scripts.
mount -t proc proc "$tmp/proc"
mount --bind /dev "$tmp/dev"
cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
chroot "$tmp" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive chroot "$tmp" apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >&2
umount "$tmp/dev" "$tmp/proc"
: >"$tmp/etc/resolv.conf"
rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*

# The real kubelet replaces the stand-in; the stand-in CRI-O stays (the
# daemon reloads crio.service, which a containerd node does not run).
systemctl --root="$tmp" disable kubelet.service >&2
rm -f "$tmp/etc/systemd/system/kubelet.service"
# nftables.service would load an empty /etc/nftables.conf over the rules
# each node sets up.
systemctl --root="$tmp" disable nftables.service >&2 || true

touch "$tmp/.nodeimage-complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "set-up: real-node image built in ${SECONDS}s" >&2
echo "$out"
