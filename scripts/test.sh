#!/usr/bin/env bash
# The whole test suite, as the README and .ci/run call it: installs the pinned real MCP servers
# and clients (scripts/test-deps.sh), then runs every test target. Extra arguments go to
# `cargo nextest run` (e.g. `scripts/test.sh real_clients` to filter).
#
# nextest runs each test in its own process, which sandbox tests need (a Landlock ruleset cannot
# be lifted from a process once applied), and runs test binaries in parallel. It does not run
# doctests or criterion benches, so those run first through cargo test; nextest goes last so its
# "Summary … N tests run: N passed" is the closing line CI reads.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

command -v cargo-nextest >/dev/null 2>&1 ||
    { echo "test.sh: error: cargo-nextest is not installed; hint: cargo install cargo-nextest --locked" >&2; exit 1; }

scripts/test-deps.sh

echo "test.sh: building all targets" >&2
cargo build --all-targets --quiet

echo "test.sh: doctests and benches (one iteration each, as tests)" >&2
cargo test --doc --quiet
# By name: `cargo test --benches` would also rerun the lib's unit tests (the lib has bench = true).
for bench in benches/*.rs; do
    [ -e "$bench" ] || continue
    cargo test --quiet --bench "$(basename "$bench" .rs)"
done

echo "test.sh: cargo nextest run" >&2
cargo nextest run --lib --bins --tests --no-fail-fast "$@"
