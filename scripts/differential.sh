#!/usr/bin/env bash
# The differential test (proxy vs kernel, tests/differential.rs) with many more paths than CI
# runs: scripts/differential.sh [COUNT] [SEED]. COUNT defaults to 100000; SEED defaults to a
# fresh random one, printed so a failure can be rerun with it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

COUNT="${1:-100000}"
SEED="${2:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}"
case "$COUNT" in ''|*[!0-9]*) echo "differential.sh: error: COUNT must be a number, got '$COUNT'; hint: scripts/differential.sh 100000" >&2; exit 1;; esac

echo "differential.sh: $COUNT paths, seed $SEED (rerun: scripts/differential.sh $COUNT $SEED)" >&2
MCPJAIL_DIFF_SEED="$SEED" MCPJAIL_DIFF_COUNT="$COUNT" \
    cargo nextest run --test differential --no-capture --no-fail-fast
