#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh Debian machine (as root):
# debootstrap and systemd-nspawn for the test nodes, and Go when missing.
# Idempotent and quick once everything is there.
set -euo pipefail

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v flock >/dev/null || need+=(util-linux)
command -v dbus-daemon >/dev/null || need+=(dbus)
command -v mount >/dev/null || need+=(mount)
# --cached: only tell whether everything is installed (hack/setup.sh).
if [ "${1:-}" = --cached ]; then
  [ ${#need[@]} -eq 0 ] && { command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; }
  exit
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "set-up: installing Debian packages ${need[*]} (once; about a minute) ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
else
  echo "set-up: Debian packages (debootstrap, systemd-nspawn, dbus): installed" >&2
fi

if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  # Debian's go is older than go.mod asks for; GOTOOLCHAIN=auto then fetches
  # the right toolchain from the Go module proxy.
  echo "set-up: installing Go (Debian's golang-go; GOTOOLCHAIN=auto fetches the version go.mod asks for) ..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
