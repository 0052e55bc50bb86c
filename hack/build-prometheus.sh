#!/usr/bin/env bash
# Builds prometheus from Prometheus' module, cached (hack/build-prometheus-cmd.sh).
exec bash "$(dirname "$0")/build-prometheus-cmd.sh" prometheus "$@"
