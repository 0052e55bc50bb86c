#!/usr/bin/env bash
# Runs the set-up steps a make target needs (the cached builds of hack/*.sh,
# then compiling the target's program), in order, and on a cold first run
# says at each minute what it is building and about how long is left. Warm,
# every step finds its cache at once and this says nothing of its own.
#
#   bash hack/setup.sh deps controlplane nodeimage nodestack nodeimage-kube demo
#
# Each build script answers `--cached` (exit 0 when its result is cached,
# without building or waiting on its lock), so the steps left to build, and
# the time they take, are known before the first starts. The compile step
# (demo: bin/nodeconfd-demo) cannot tell; it counts as cold when another
# step is (a fresh machine's Go build cache is empty too). The estimates are
# minutes on 2 cores shared with other work, from the ranges the scripts
# were measured at; an idle or bigger machine is faster.
set -euo pipefail
cd "$(dirname "$0")/.."

# step NAME -> script, what it builds, minutes.
declare -A script=(
  [deps]=install-deps.sh [controlplane]=build-controlplane.sh [nodeimage]=node-image.sh
  [nodestack]=build-nodestack.sh [nodeimage-kube]=node-image-kube.sh [promtool]=build-promtool.sh
  [prometheus]=build-prometheus.sh [registry]=build-registry.sh
)
declare -A what=(
  [deps]="Debian packages (debootstrap, systemd-nspawn, dbus)"
  [controlplane]="the control plane (kube-apiserver, kubectl, etcd)"
  [nodeimage]="the node image (Debian with systemd)"
  [nodestack]="the node stack (kubelet, kube-scheduler, kube-controller-manager, containerd)"
  [nodeimage-kube]="the real-node image (runc, CNI plugins)"
  [promtool]="promtool"
  [prometheus]="the Prometheus server (for the alert gate's tests)"
  [registry]="the OCI registry the real nodes pull from (distribution)"
  [demo]="the demo (Go packages of client-go and the test bed)"
)
declare -A minutes=(
  [deps]=1 [controlplane]=15 [nodeimage]=3 [nodestack]=30 [nodeimage-kube]=1 [promtool]=5 [prometheus]=4 [registry]=6 [demo]=4
)

for s in "$@"; do
  [ -n "${what[$s]:-}" ] || { echo "hack/setup.sh: unknown step $s" >&2; exit 2; }
done

# run STEP [ARGS] runs the step's script (its result, a folder, is not
# needed here), or for demo compiles it.
run() {
  case $1 in
    demo) go build -o bin/nodeconfd-demo ./test/demo ;;
    *) bash "hack/${script[$1]}" "${@:2}" >/dev/null ;;
  esac
}

# The cold steps and their total; nothing is printed when all are cached.
declare -A probed_cold=()
anycold=""
for s in "$@"; do
  if [ -n "${script[$s]:-}" ] && ! run "$s" --cached 2>/dev/null; then
    probed_cold[$s]=1 anycold=1
  fi
done
cold=() total=0
for s in "$@"; do
  if [ -n "${probed_cold[$s]:-}" ] || { [ -n "$anycold" ] && [ -z "${script[$s]:-}" ]; }; then
    cold+=("$s")
  fi
done
for s in "${cold[@]}"; do total=$((total + minutes[$s])); done
if [ ${#cold[@]} -gt 0 ]; then
  list=""
  for s in "${cold[@]}"; do list+="${list:+, }${what[$s]} (~${minutes[$s]} min)"; done
  echo "set-up: first run on this machine: building $list; about $total min in all," \
    "once (cached in ~/.cache/nodeconfd)" >&2
fi

# ticker LABEL MINUTES LATER LOG prints, every minute until killed, how long
# the step has run, the sub-step its script last named in LOG, and the time
# left: this step's estimate less what it ran (at least a minute), plus LATER,
# the estimates of the cold steps after it.
ticker() {
  local label=$1 est=$2 later=$3 log=$4 m=0 left sub nap
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM
  while :; do
    sleep 60 &
    nap=$!
    wait "$nap"
    m=$((m + 1))
    left=$((est - m))
    [ "$left" -ge 1 ] || left=1
    sub=$(sed -n 's/^set-up:   //p' "$log" 2>/dev/null | tail -n1 | sed 's/ *(.*//; s/ *\.\.\.$//')
    echo "set-up: $m min into building $label${sub:+ (now: $sub)}; about $((left + later)) min left" >&2
  done
}

start=$SECONDS
for s in "$@"; do
  later=0 seen=""
  for c in "${cold[@]}"; do
    [ -n "$seen" ] && later=$((later + minutes[$c]))
    [ "$c" = "$s" ] && seen=1
  done
  log=$(mktemp)
  ticker "${what[$s]}" "${minutes[$s]}" "$later" "$log" &
  tick=$!
  # The step's own messages go on to the terminal, and to the log for the
  # ticker's sub-step.
  status=0
  run "$s" 2> >(tee "$log" >&2) || status=$?
  kill "$tick" 2>/dev/null || true
  wait "$tick" 2>/dev/null || true
  rm -f "$log"
  [ "$status" -eq 0 ] || exit "$status"
done
if [ ${#cold[@]} -gt 0 ]; then
  took=$((SECONDS - start))
  if [ "$took" -lt 120 ]; then took="${took}s"; else took="$(((took + 30) / 60)) min"; fi
  echo "set-up: done in $took; later runs use the cache" >&2
fi
