#!/usr/bin/env bash
# The proxy benchmark (benches/proxy.rs) measuring the proxy users get.
#
#   scripts/bench.sh            # = cargo bench --bench proxy, with the release build's proxy
#
# Why not plain `cargo bench`: it builds the binaries with the features the dev-dependencies add
# (serde_json's float_roundtrip, regex's unicode tables, ... from criterion and jsonschema), so
# its mcpjail-proxy is not the one `cargo build --release` makes, and the committed profile,
# made from the release build, does not match the functions those features change. Measured on
# 2026-12-04: that binary read ~1.15x the byte relay on one CPU where the release build read
# ~1.13x in the same alternating rounds. This builds the release proxy first, keeps a copy (the
# bench's own build then overwrites target/release/mcpjail-proxy), and points the bench at it;
# the fixtures and relays are the bench's, the same for every mode.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked --bin mcpjail-proxy
mkdir -p target/bench-proxy
cp target/release/mcpjail-proxy target/bench-proxy/mcpjail-proxy
MCPJAIL_BENCH_PROXY="$PWD/target/bench-proxy/mcpjail-proxy" cargo bench --locked --bench proxy "$@"
