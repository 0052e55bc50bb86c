#!/usr/bin/env bash
# Builds promtool from Prometheus' module, cached (hack/build-prometheus-cmd.sh).
exec bash "$(dirname "$0")/build-prometheus-cmd.sh" promtool "$@"
