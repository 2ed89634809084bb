#!/usr/bin/env bash
# A profile-guided build of mcpjail-proxy (issue 10): build it instrumented, run proxied calls
# through it, and build it again laid out by what those calls ran. Prints the binary's path.
#
#   scripts/pgo-build.sh [CALLS]        # default 20 000 calls a training run
#   MCPJAIL_BENCH_PROXY=$(scripts/pgo-build.sh) cargo bench --bench proxy
#
# Why: on one CPU a call's cost is mostly the proxy's code coming back into the caches after
# every context switch, not its instruction count. Without a profile the hot path of a call is
# spread over ~660 cache lines of code (~40 KiB, more than L1i); laid out by the profile it is
# ~430, and ~25% fewer instructions run (see the README's twenty-fifth pass).
#
# The training runs the proxy jailed, unjailed and with --log (so the log's path is not judged
# cold) against the quiet files fixture, with the fixture caller: the same kind of traffic as
# the bench. The profile is made here and not committed: it is tied to this rustc's LLVM and to
# this source, and a stale one only makes a slower binary, never a wrong one.
#
# Needs rustup's llvm-tools (`rustup component add llvm-tools`) for llvm-profdata of the same
# LLVM as rustc. Everything goes under target/pgo/.
set -euo pipefail
cd "$(dirname "$0")/.."

calls="${1:-20000}"
host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [[ ! -x "$profdata" ]]; then
  echo "pgo-build.sh: no llvm-profdata for this rustc at $profdata" >&2
  echo "  hint: rustup component add llvm-tools" >&2
  exit 2
fi

out="$PWD/target/pgo"
rm -rf "$out/raw" "$out/mcpjail-proxy.profdata"
mkdir -p "$out/raw"

# The caller and the fixture server, built as usual: only the proxy is profiled.
cargo build --release --locked --bin mcpjail-fixture-caller --bin mcpjail-fixture-files >&2
RUSTFLAGS="-Cprofile-generate=$out/raw" \
  cargo build --release --locked --bin mcpjail-proxy --target-dir "$out/gen" >&2

scope="$(mktemp -d)"
trap 'rm -rf "$scope"' EXIT
train() {
  FIXTURE_QUIET_CALLS=1 LLVM_PROFILE_FILE="$out/raw/%p-%m.profraw" \
    target/release/mcpjail-fixture-caller "$1" -- \
    "$out/gen/release/mcpjail-proxy" "${@:2}" --env-keep FIXTURE_QUIET_CALLS --pin off -- \
    target/release/mcpjail-fixture-files "$scope" >&2
}
train "$calls"
train "$((calls / 4))" --no-jail
train "$((calls / 10))" --log

"$profdata" merge --sparse -o "$out/mcpjail-proxy.profdata" "$out/raw" >&2
RUSTFLAGS="-Cprofile-use=$out/mcpjail-proxy.profdata" \
  cargo build --release --locked --bin mcpjail-proxy --target-dir "$out/use" >&2
echo "$out/use/release/mcpjail-proxy"
