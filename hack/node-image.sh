#!/usr/bin/env bash
# Builds, once, the Debian bookworm root filesystem that the test bed boots
# with systemd-nspawn as a "node" (see test/testbed/nspawn), and prints its
# folder. The result is cached by recipe version; only the first run pays.
#
# The mirror is the one this machine's apt already uses, so no host name is
# written here. Needs root, debootstrap and systemctl (for --root enabling).
set -euo pipefail

# Bump when anything below the cache check changes what ends up in the image.
RECIPE_VERSION=1
SUITE=bookworm
PACKAGES=systemd,systemd-sysv,dbus,procps

cache=${NODECONFD_CACHE:-$HOME/.cache/nodeconfd}
out="$cache/nodeimage-$SUITE-v$RECIPE_VERSION"
mkdir -p "$cache"

# --cached: only tell whether the build is done, and print its folder if so
# (hack/setup.sh, hack/node-image-kube.sh).
if [ "${1:-}" = --cached ]; then
  [ -f "$out/.nodeimage-complete" ] && echo "$out"
  exit
fi

exec 9>"$cache/nodeimage.lock"
flock 9

if [ -f "$out/.nodeimage-complete" ]; then
  echo "set-up: node image (Debian $SUITE root filesystem): cached in $out" >&2
  echo "$out"
  exit 0
fi
echo "set-up: building the node image (Debian $SUITE with systemd, debootstrap from the apt mirror)," \
  "once (cached in $cache); about 2-4 minutes ..." >&2

# mirror prints the first non-security Debian mirror of the apt sources.
mirror() {
  local f=/etc/apt/sources.list.d/debian.sources uri
  if [ -f "$f" ]; then
    uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f" | grep -v security | head -n1 || true)
    [ -n "$uri" ] && { echo "$uri"; return; }
  fi
  if [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
    [ -n "$uri" ] && { echo "$uri"; return; }
  fi
  echo "node-image.sh: no Debian mirror found in the apt sources" >&2
  return 1
}

# Under the lock, any temp dir is left over from a killed build.
rm -rf --one-file-system "$out".tmp.*
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf --one-file-system "$tmp"' EXIT

debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$tmp" "$(mirror)" >&2

# Each node writes its own machine ID and hostname into its overlay.
rm -f "$tmp/etc/machine-id" "$tmp/var/lib/dbus/machine-id"
: >"$tmp/etc/hostname"
rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*

# A login user and a few groups with fixed IDs, for file owner tests.
chroot "$tmp" groupadd --gid 1000 core
chroot "$tmp" useradd --uid 1000 --gid core --create-home --home-dir /home/core --shell /bin/bash core
install -d -m 0700 -o 1000 -g 1000 "$tmp/home/core/.ssh"
chroot "$tmp" groupadd --gid 1100 nodeconf-a
chroot "$tmp" groupadd --gid 1101 nodeconf-b
chroot "$tmp" usermod --append --groups nodeconf-a core

# Stand-ins for CRI-O and the kubelet: they run forever, and each reload
# appends a line to /var/lib/<name>-reloads so that tests can count reloads.
for name in crio kubelet; do
  cat >"$tmp/etc/systemd/system/$name.service" <<EOF
[Unit]
Description=Stand-in for $name (nodeconfd test bed)

[Service]
Type=simple
ExecStart=/bin/sleep infinity
ExecReload=/bin/sh -c 'echo reload >>/var/lib/$name-reloads'

[Install]
WantedBy=multi-user.target
EOF
  systemctl --root="$tmp" enable "$name.service" >&2
done

# Units that fail, wait or waste time inside a container with no network and
# no real console: masked so that a boot reaches "running" quickly.
systemctl --root="$tmp" mask \
  getty@.service console-getty.service serial-getty@.service container-getty@.service \
  systemd-networkd-wait-online.service systemd-networkd.service systemd-resolved.service \
  systemd-timesyncd.service systemd-firstboot.service systemd-update-utmp-runlevel.service \
  apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
  fstrim.timer systemd-tmpfiles-clean.timer >&2

# Journal to the container's console too, so a failing boot shows in logs.
mkdir -p "$tmp/etc/systemd/journald.conf.d"
printf '[Journal]\nForwardToConsole=yes\nMaxLevelConsole=warning\n' \
  >"$tmp/etc/systemd/journald.conf.d/50-testbed.conf"

touch "$tmp/.nodeimage-complete"
chmod 0755 "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "set-up: node image built in ${SECONDS}s" >&2
echo "$out"
