#!/usr/bin/env bash
# The soak (issue 14): CALLS (default 1 000 000) pipelined echo calls through the jailed
# mcpjail-proxy against the quiet files fixture, sampling the proxy's RSS, open descriptors and
# latency percentiles per window, then a tools/list_changed storm and a server writing a line
# that never ends. Prints a table and a verdict; exits 1 when memory or descriptors fail it.
#
#   scripts/soak.sh [CALLS]
#
# Knobs: SOAK_PROFILE=release builds and runs the release profile (default: debug, which the
# tests already build); SOAK_WINDOW, SOAK_IN_FLIGHT, SOAK_WARMUP, SOAK_STORM, SOAK_FLOOD_MIB
# (see examples/soak.rs). Latency on a shared machine is reported, not judged.
set -euo pipefail
cd "$(dirname "$0")/.."

calls="${1:-1000000}"
profile="${SOAK_PROFILE:-debug}"
case "$profile" in
  debug) flag=() ;;
  release) flag=(--release) ;;
  *) echo "soak.sh: SOAK_PROFILE=$profile (hint: debug or release)" >&2; exit 2 ;;
esac

cargo build "${flag[@]}" --bins --example soak >&2
exec "target/$profile/examples/soak" "$calls"
